/*
 * fuzz_ephemeral: /proc/sys/net/ipv4/ip_local_port_range text
 * ("32768\t60999\n") through distenv_parse_ephemeral, and the derived
 * MASTER_PORT for that range (distenv_derive_port), which must lie in
 * port_range and outside the ephemeral range.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_options.h"
#include "distenv_ports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_error err;
	uint16_t eph_lo = 1, eph_hi = 0, port = 0;
	uint32_t ids[2] = {0, 0};
	char *text;

	if (size < 8)
		return 0;
	memcpy(ids, data, 8);
	text = malloc(size - 8 + 1);
	if (!text)
		return 0;
	memcpy(text, data + 8, size - 8);
	text[size - 8] = '\0';
	distenv_error_clear(&err);
	if (distenv_parse_ephemeral(text, &eph_lo, &eph_hi, &err) != 0) {
		if (!distenv_error_is_set(&err))
			abort();
		eph_lo = 1; /* as distenv_sys_ephemeral: no range */
		eph_hi = 0;
	} else if (eph_lo > eph_hi) {
		abort();
	}
	if (distenv_derive_port(ids[0], ids[1], DISTENV_PORT_LO_DEFAULT,
				DISTENV_PORT_HI_DEFAULT, eph_lo, eph_hi, &port,
				&err) == 0) {
		if (port < DISTENV_PORT_LO_DEFAULT ||
		    port > DISTENV_PORT_HI_DEFAULT)
			abort();
		if (eph_lo <= eph_hi && port >= eph_lo && port <= eph_hi)
			abort();
	}
	free(text);
	return 0;
}
