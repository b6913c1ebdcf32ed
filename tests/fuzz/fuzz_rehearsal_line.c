/*
 * fuzz_rehearsal_line: a line on the rehearsal's check-in port (any
 * program on the network may send one) through
 * distenv_rehearsal_facts_parse; what it reads must write back to the
 * same facts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_rehearsal.h"
#include "distenv_rehearsal_facts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_rehearsal_facts f, g;
	char line[DISTENV_REHEARSAL_LINE_MAX];
	uint32_t node = 0, again = 0;
	char *value;

	if (size >= DISTENV_REHEARSAL_LINE_MAX)
		return 0; /* the socket layer reads no longer line */
	value = malloc(size + 1);
	if (!value)
		return 0;
	memcpy(value, data, size);
	value[size] = '\0';
	if (distenv_rehearsal_facts_parse(value, "checkin", 42, 3, &node, &f) ==
	    0) {
		if (f.verbs < -1 || f.verbs > 1 || f.ib_mtu_lo > f.ib_mtu_hi ||
		    memchr(f.ifname, '\0', sizeof(f.ifname)) == NULL)
			abort();
		distenv_rehearsal_facts_line(line, sizeof(line), "checkin", 42,
					     3, node, &f);
		if (distenv_rehearsal_facts_parse(line, "checkin", 42, 3,
						  &again, &g) != 0 ||
		    again != node || memcmp(&f, &g, sizeof(f)) != 0)
			abort();
	}
	free(value);
	return 0;
}
