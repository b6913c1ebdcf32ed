/*
 * fuzz_option_values: the values of --distenv, --distenv-port,
 * --distenv-nproc and plugstack port_range= (distenv_options.h), and
 * of any row of the option table through distenv_request_set, as the
 * plugin's callback and distenv env hand them over.
 *
 * The first byte picks the parser (and the row), the rest is the value
 * as srun hands it to the option callback (a NUL-terminated string).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failed(int rc, const struct distenv_error *err)
{
	if (rc != 0 && rc != -1)
		abort();
	if (rc == -1 && !distenv_error_is_set(err))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_error err;
	enum distenv_mode mode;
	uint16_t port, lo, hi;
	uint32_t nproc, nmin, nmax;
	struct distenv_request req;
	enum distenv_opt_id id;
	char *value;
	int rc;

	if (size < 1)
		return 0;
	value = malloc(size);
	if (!value)
		return 0;
	memcpy(value, data + 1, size - 1);
	value[size - 1] = '\0';
	distenv_error_clear(&err);
	switch (data[0] % 6) {
	case 0:
		rc = distenv_parse_mode(value, "--distenv", &mode, &err);
		if (rc == 0 && mode != DISTENV_MODE_TORCHRUN &&
		    mode != DISTENV_MODE_ELASTIC &&
		    mode != DISTENV_MODE_TASKS && mode != DISTENV_MODE_OFF)
			abort();
		break;
	case 1:
		rc = distenv_parse_port(value, "--distenv-port", &port, &err);
		if (rc == 0 && port < 1024)
			abort();
		break;
	case 2:
		rc = distenv_parse_nproc(value, "--distenv-nproc", &nproc, &err);
		if (rc == 0 && (nproc < 1 || nproc > 1024))
			abort();
		break;
	case 3:
		rc = distenv_parse_nodes_range(value, "--distenv-nodes", &nmin,
					       &nmax, &err);
		if (rc == 0 && (nmin < 1 || nmin > nmax || nmax > 100000))
			abort();
		break;
	case 4:
		id = (enum distenv_opt_id)((data[0] / 6) % DISTENV_OPT_COUNT);
		memset(&req, 0, sizeof(req));
		rc = distenv_request_set(&req, id, value, "--distenv-x", &err);
		if (rc == 0 &&
		    distenv_option_table[id].parser != DISTENV_PARSE_REQUEST)
			abort();
		if (req.ifname[sizeof(req.ifname) - 1] != '\0')
			abort();
		break;
	default:
		rc = distenv_parse_port_range(value, "port_range", &lo, &hi,
					      &err);
		if (rc == 0 && (lo < 1024 || lo > hi))
			abort();
		break;
	}
	check_failed(rc, &err);
	free(value);
	return 0;
}
