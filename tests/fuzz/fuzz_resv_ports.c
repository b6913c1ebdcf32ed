/*
 * fuzz_resv_ports: SLURM_STEP_RESV_PORTS values ("20000-20002",
 * "20000,20005-20006") through distenv_resv_ports_first.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_ports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_error err;
	uint16_t port = 0;
	char *value = malloc(size + 1);

	if (!value)
		return 0;
	memcpy(value, data, size);
	value[size] = '\0';
	distenv_error_clear(&err);
	if (distenv_resv_ports_first(value, &port, &err) == 0) {
		/* Port 0 is never a reserved port, and the value starts
		 * with the digits of the port it returned (leading zeros,
		 * which Slurm never writes, are read as decimal: "008" is
		 * 8; corpus/fuzz_resv_ports/leading-zeros). */
		if (port == 0 || value[0] < '0' || value[0] > '9')
			abort();
		if ((uint32_t)strtoul(value, NULL, 10) != port)
			abort();
	} else if (!distenv_error_is_set(&err)) {
		abort();
	}
	free(value);
	return 0;
}
