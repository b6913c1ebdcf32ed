/* distenv_sys_hostlist.c: the first host of a Slurm node list. */
#include "distenv_sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

int distenv_first_host(const char *nodelist, const char *where, char *buf,
		       size_t len, struct distenv_error *err)
{
	/* struct hostlist *, not hostlist_t: 23.11 changed the typedef from
	 * a pointer to a struct (../shared/CONTRACTS.md 5). */
	struct hostlist *hl;
	char *first;
	int n;

	if (!nodelist || !nodelist[0])
		return distenv_error_set(err, where,
					 "run inside a Slurm job or step",
					 "no node list");
	hl = slurm_hostlist_create(nodelist);
	if (!hl)
		return distenv_error_set(err, where, NULL,
					 "'%.64s' is not a Slurm node list",
					 nodelist);
	first = slurm_hostlist_shift(hl);
	slurm_hostlist_destroy(hl);
	if (!first || !first[0]) {
		free(first);
		return distenv_error_set(err, where, NULL,
					 "'%.64s' names no node", nodelist);
	}
	n = snprintf(buf, len, "%s", first);
	free(first);
	if (n < 0 || (size_t)n >= len)
		return distenv_error_set(err, where, NULL,
					 "first host name is too long");
	return 0;
}
