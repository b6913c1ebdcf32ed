/*
 * fuzz_tasks_per_node: SLURM_STEP_TASKS_PER_NODE values ("2(x3),1",
 * sbatch(1) OUTPUT ENVIRONMENT VARIABLES) through distenv_tasks_on_node.
 * The first four bytes are the node id, the rest the value.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_step.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_error err;
	uint32_t node_id, count = 0;
	char *value;

	if (size < 4)
		return 0;
	memcpy(&node_id, data, 4);
	/* Most lists are short: keep most node ids small so that the
	 * fuzzer reaches the "found" path, and some huge. */
	if (!(node_id & 0x80000000u))
		node_id &= 0xff;
	value = malloc(size - 4 + 1);
	if (!value)
		return 0;
	memcpy(value, data + 4, size - 4);
	value[size - 4] = '\0';
	distenv_error_clear(&err);
	if (distenv_tasks_on_node(value, node_id, &count, &err) == 0) {
		/* Accepted values hold nothing but the list syntax, after
		 * the entry of node_id too (corpus/.../trailing-junk:
		 * "4;reboot" was accepted for node 0 until the parser read
		 * the whole value). */
		if (strspn(value, "0123456789(x),") != strlen(value))
			abort();
	} else if (!distenv_error_is_set(&err)) {
		abort();
	}
	free(value);
	return 0;
}
