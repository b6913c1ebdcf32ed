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
	char *head, *first;
	size_t i;
	int depth = 0, n;
	char shown[72];

	if (!nodelist || !nodelist[0])
		return distenv_error_set(err, where,
					 "run inside a Slurm job or step",
					 "no node list");
	/* Only the first element ("a[1-2]" of "a[1-2],b[01-03]") goes to
	 * hostlist: a list of 10,000 names that do not fold into ranges
	 * would otherwise be parsed whole for every task. */
	for (i = 0; nodelist[i]; i++) {
		if (nodelist[i] == '[')
			depth++;
		else if (nodelist[i] == ']')
			depth--;
		else if (depth == 0 && (nodelist[i] == ',' || nodelist[i] == ' '))
			break;
	}
	head = strndup(nodelist, i);
	if (!head)
		return distenv_error_set(err, where, NULL, "out of memory");
	hl = slurm_hostlist_create(head);
	free(head);
	if (!hl)
		return distenv_error_set(err, where, NULL,
					 "'%s' is not a Slurm node list",
					 distenv_printable(nodelist, shown,
							   sizeof(shown)));
	first = slurm_hostlist_shift(hl);
	slurm_hostlist_destroy(hl);
	if (!first || !first[0]) {
		free(first);
		return distenv_error_set(err, where, NULL,
					 "'%s' names no node",
					 distenv_printable(nodelist, shown,
							   sizeof(shown)));
	}
	n = snprintf(buf, len, "%s", first);
	free(first);
	if (n < 0 || (size_t)n >= len)
		return distenv_error_set(err, where, NULL,
					 "first host name is too long");
	return 0;
}
