/* Unit tests: distenv_pipe_wait_drained, on real pipes (the failure path
 * of task_init waits with it until slurmstepd has read the error). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "distenv_sys.h"

struct late_reader {
	int fd;
	int delay_ms;
	volatile int done; /* set once every byte was read */
};

static void *read_late(void *arg)
{
	struct late_reader *r = arg;
	struct timespec t = {0, (long)r->delay_ms * 1000000L};
	char buf[512];
	int unread = 0;

	nanosleep(&t, NULL);
	while (ioctl(r->fd, FIONREAD, &unread) == 0 && unread > 0)
		if (read(r->fd, buf, sizeof(buf)) <= 0)
			break;
	r->done = 1;
	return NULL;
}

/* It returns only after the reader took the bytes, not before: at that
 * moment the pipe is empty, though the reader (which reads 100 ms late)
 * may not have returned from read() yet. */
static void waits_for_the_reader(void **state)
{
	int p[2], unread = -1;
	pthread_t th;
	struct late_reader r = {0};

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "distenv: error: n2: cannot resume\n", 34), 34);
	r.fd = p[0];
	r.delay_ms = 100;
	assert_int_equal(pthread_create(&th, NULL, read_late, &r), 0);
	assert_int_equal(distenv_pipe_wait_drained(p[1], 5000, 0), 1);
	assert_int_equal(ioctl(p[0], FIONREAD, &unread), 0);
	assert_int_equal(unread, 0);
	pthread_join(th, NULL);
	assert_int_equal(r.done, 1);
	close(p[0]);
	close(p[1]);
}

/* Nobody reads: it gives up after max_ms, and the bytes are still there. */
static void gives_up_after_max_ms(void **state)
{
	int p[2], unread = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "0123456789", 10), 10);
	assert_int_equal(distenv_pipe_wait_drained(p[1], 30, 0), 0);
	assert_int_equal(ioctl(p[0], FIONREAD, &unread), 0);
	assert_int_equal(unread, 10);
	close(p[0]);
	close(p[1]);
}

static void empty_pipe_is_drained(void **state)
{
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(distenv_pipe_wait_drained(p[1], 0, 0), 1);
	close(p[0]);
	close(p[1]);
}

/* stderr to a file (srun --error=FILE) or a terminal: nothing to wait for. */
static void not_a_pipe(void **state)
{
	char path[] = "/tmp/distenv-drain-XXXXXX";
	int fd = mkstemp(path), null_fd = open("/dev/null", O_WRONLY);

	(void)state;
	assert_true(fd >= 0);
	assert_true(null_fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	assert_int_equal(distenv_pipe_wait_drained(fd, 1000, 0), -1);
	assert_int_equal(distenv_pipe_wait_drained(null_fd, 1000, 0), -1);
	assert_int_equal(distenv_pipe_wait_drained(-1, 1000, 0), -1);
	close(fd);
	close(null_fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(waits_for_the_reader),
		cmocka_unit_test(gives_up_after_max_ms),
		cmocka_unit_test(empty_pipe_is_drained),
		cmocka_unit_test(not_a_pipe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
