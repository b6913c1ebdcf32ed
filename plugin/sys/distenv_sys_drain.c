/*
 * distenv_sys_drain.c: wait until the reader of a pipe has taken what was
 * written to it.
 *
 * Why: a task whose task_init fails writes its error to stderr, a pipe
 * that slurmstepd's I/O thread forwards to srun, and then exits.
 * slurmstepd reports the exit to srun on another connection; with
 * --kill-on-bad-exit=1 srun then ends the step at once, and an error
 * still in the pipe, or not yet forwarded, was lost (seen in the
 * resume-preflight test of tests/cluster/templates.bats, more often
 * under load and under ASan). Waiting here, on the failure path only,
 * for the pipe to be read and the I/O thread to send it keeps the
 * message. FIONREAD on either end of a Linux pipe gives the bytes
 * unread (pipe(7)).
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include "distenv_sys.h"

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long) (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* Milliseconds on the monotonic clock: a loaded machine oversleeps each
 * poll, so the bound is kept by the clock, not by counting sleeps. */
static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int distenv_pipe_wait_drained(int fd, int max_ms, int settle_ms)
{
	struct stat st;
	int unread = 0;
	long long deadline;

	if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
		return -1;
	deadline = now_ms() + max_ms;
	for (;;) {
		if (ioctl(fd, FIONREAD, &unread) != 0)
			return -1;
		if (unread == 0)
			break;
		if (now_ms() >= deadline)
			return 0;
		sleep_ms(5);
	}
	if (settle_ms > 0)
		sleep_ms(settle_ms);
	return 1;
}
