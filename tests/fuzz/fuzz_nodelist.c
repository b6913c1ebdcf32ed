/*
 * fuzz_nodelist: the first host of a Slurm node list
 * (SLURM_STEP_NODELIST / SLURM_JOB_NODELIST) through distenv_first_host,
 * which cuts the first element and hands it to libslurm's
 * slurm_hostlist_create/shift (docs/contracts.md 5). libslurm is not
 * instrumented; ASan still checks every byte distenv reads or writes and
 * every allocation crossing the boundary (free() of the shifted name).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_step.h"
#include "distenv_sys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_error err;
	char host[DISTENV_HOST_MAX];
	char *list;

	/* Slurm's hostlist parser expands ranges of up to its own
	 * MAX_RANGE; long inputs only measure that, not distenv. */
	if (size > 1024)
		return 0;
	list = malloc(size + 1);
	if (!list)
		return 0;
	memcpy(list, data, size);
	list[size] = '\0';
	distenv_error_clear(&err);
	if (distenv_first_host(list, "SLURM_STEP_NODELIST", host, sizeof(host),
			       &err) == 0) {
		if (!host[0] || strlen(host) >= sizeof(host))
			abort();
	} else if (!distenv_error_is_set(&err)) {
		abort();
	}
	free(list);
	return 0;
}
