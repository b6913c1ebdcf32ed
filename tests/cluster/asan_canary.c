/*
 * asan_canary.c: a SPANK plugin with a deliberate one-byte heap overflow,
 * used only by tests/sanitize_cluster.sh to prove that its harness sees
 * a sanitizer report from each process that runs distenv's code: srun
 * (--asan-canary=srun, in init_post_opt) and slurmstepd's forked task
 * (--asan-canary=task, in task_init). Without the canary, "no report"
 * could also mean "no sanitizer runtime was loaded there".
 *
 * Built by tests/sanitize_cluster.sh with -fsanitize=address; never
 * installed, never part of distenv.so.
 */
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

SPANK_PLUGIN(asan_canary, 1);

static char where[16];

static int opt_canary(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	if (!optarg || strlen(optarg) >= sizeof(where))
		return -1;
	strcpy(where, optarg);
	return 0;
}

struct spank_option spank_options[] = {
	{"asan-canary", "srun|task",
	 "read one byte past a heap block, in srun or in the task (tests)", 1,
	 0, opt_canary},
	SPANK_OPTIONS_TABLE_END,
};

/* The read goes through a volatile pointer so the compiler keeps it. */
static int overflow(void)
{
	char *block = malloc(8);
	volatile char *past;
	int byte;

	if (!block)
		return -1;
	memset(block, 'x', 8);
	past = block + 8;
	byte = *past;
	free(block);
	return byte == 0x7f ? 1 : 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!spank_remote(sp) && strcmp(where, "srun") == 0)
		return overflow() < 0 ? -1 : 0;
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (strcmp(where, "task") == 0)
		return overflow() < 0 ? -1 : 0;
	return 0;
}
