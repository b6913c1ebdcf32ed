/*
 * fuzz_ifspec: NCCL-style interface lists (`^=eth0,ib`) as
 * --distenv-ifname, NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME give them
 * (distenv_ifspec.h), then matching against a fixed set of interfaces.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_ifspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"lo", "eth0", "eth1", "eth10",
					    "ib0", "docker0", "ens5f1"};
	struct distenv_iface ifaces[sizeof(names) / sizeof(names[0])];
	struct distenv_ifspec spec;
	struct distenv_error err;
	char first[DISTENV_IFNAME_MAX];
	char *text = malloc(size + 1);
	size_t i;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	memset(ifaces, 0, sizeof(ifaces));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		strcpy(ifaces[i].name, names[i]);
		ifaces[i].up = 1;
		ifaces[i].loopback = i == 0;
	}
	distenv_error_clear(&err);
	if (distenv_ifspec_parse(text, "--distenv-ifname", &spec, &err) == 0) {
		if (spec.count == 0 || spec.count > DISTENV_IFSPEC_MAX_NAMES)
			abort();
		for (i = 0; i < spec.count; i++)
			if (!spec.names[i][0] ||
			    strlen(spec.names[i]) >= DISTENV_IFNAME_MAX)
				abort();
		if (distenv_ifspec_any(&spec, ifaces, sizeof(names) / sizeof(names[0]),
				       1, first) &&
		    strlen(first) >= DISTENV_IFNAME_MAX)
			abort();
	} else if (!distenv_error_is_set(&err)) {
		abort();
	}
	free(text);
	return 0;
}
