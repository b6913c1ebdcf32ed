/*
 * late_task.c: a SPANK plugin for the tests only (rehearsal.bats),
 * listed before distenv in plugstack.conf: in task_init, on the node
 * named by the job's DISTENV_TEST_LATE_NODE, it sleeps
 * DISTENV_TEST_LATE_MS milliseconds, so that the task reaches
 * distenv's task_init late there, as behind a slow prolog or a plugin
 * that pulls an image. Never installed, never part of distenv.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/spank.h>

SPANK_PLUGIN(late_task, 1);

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char node[256] = "", late[256] = "", ms[32] = "";
	struct timespec t;
	long n;

	(void) ac;
	(void) av;
	if (spank_getenv(sp, "DISTENV_TEST_LATE_NODE", late, sizeof(late)) !=
		    ESPANK_SUCCESS ||
	    spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) !=
		    ESPANK_SUCCESS ||
	    strcmp(node, late) != 0 ||
	    spank_getenv(sp, "DISTENV_TEST_LATE_MS", ms, sizeof(ms)) !=
		    ESPANK_SUCCESS)
		return 0;
	n = strtol(ms, NULL, 10);
	t.tv_sec = n / 1000;
	t.tv_nsec = (n % 1000) * 1000000L;
	nanosleep(&t, NULL);
	return 0;
}
