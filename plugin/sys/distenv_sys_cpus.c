/* distenv_sys_cpus.c: the CPUs this process may run on (distenv_sys.h). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "distenv_sys.h"

/* Append "A" or "A-B" to list, with a comma after the first; a list
 * that does not fit ends in "...". */
static void add_range(char *list, size_t len, int a, int b)
{
	size_t used = strlen(list);
	int w;

	if (used + 4 >= len)
		return;
	if (a == b)
		w = snprintf(list + used, len - used, "%s%d", used ? "," : "",
			     a);
	else
		w = snprintf(list + used, len - used, "%s%d-%d",
			     used ? "," : "", a, b);
	if (w < 0 || (size_t) w >= len - used)
		snprintf(list + len - 4, 4, "...");
}

uint32_t distenv_sys_affinity(char *list, size_t len)
{
	cpu_set_t set;
	int cpu, start = -1;
	uint32_t count;

	if (len)
		list[0] = '\0';
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	count = (uint32_t) CPU_COUNT(&set);
	for (cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		int in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);

		if (in && start < 0)
			start = cpu;
		if (!in && start >= 0) {
			if (len)
				add_range(list, len, start, cpu - 1);
			start = -1;
		}
	}
	return count;
}
