/*
 * fuzz_site_config: the site policy file parser (distenv_policy_parse,
 * plugin/site/), fed from a memory buffer as the loader feeds it, then
 * the effective policy of every partition it accepted and of one it does
 * not list, applied to a site (distenv_policy_apply).
 *
 * Checked beyond "no crash, no leak": a failure always says what and
 * where ("NAME:LINE:COL" or the name), a failure leaves no policy
 * behind, and whatever is accepted holds only values the core takes
 * (ranges ordered, interface lists that parse, names that fit).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_ifspec.h"
#include "distenv_master.h"
#include "distenv_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_policy(const struct distenv_policy *p)
{
	struct distenv_error err;
	size_t i;

	if ((p->set & DISTENV_POLICY_PORT_RANGE) &&
	    (p->port_lo < 1024 || p->port_lo > p->port_hi))
		abort();
	if (p->interfaces[0] &&
	    distenv_ifspec_validate(p->interfaces, "fuzz", &err))
		abort();
	if (p->hca_mode == DISTENV_HCA_FIXED &&
	    distenv_ifspec_validate(p->hca, "fuzz", &err))
		abort();
	if (p->master_name[0] &&
	    distenv_master_name_check(p->master_name, "fuzz", &err))
		abort();
	if (p->n_env > DISTENV_SITE_VARS_MAX ||
	    p->n_storage > DISTENV_POLICY_MOUNTS_MAX)
		abort();
	for (i = 0; i < p->n_env; i++)
		if (!p->env[i].name[0] ||
		    distenv_value_check(p->env[i].value, "fuzz", &err))
			abort();
	for (i = 0; i < p->n_storage; i++)
		if (p->storage[i].path[0] != '/')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_policy_file file;
	struct distenv_policy eff;
	struct distenv_site site;
	struct distenv_error err;
	size_t i;

	distenv_policy_file_init(&file);
	distenv_error_clear(&err);
	if (distenv_policy_parse((const char *)data, size, "fuzz.yaml", &file,
				 &err)) {
		if (!distenv_error_is_set(&err) || !err.where[0])
			abort();
		if (file.n_partitions || file.partitions || file.global.set)
			abort();
		distenv_policy_file_free(&file);
		return 0;
	}
	check_policy(&file.global);
	for (i = 0; i < file.n_partitions; i++) {
		if (distenv_policy_effective(&file, file.partitions[i].name,
					     &eff) != 1)
			abort();
		check_policy(&eff);
		distenv_site_defaults(&site);
		distenv_policy_apply(&eff, file.partitions[i].name, &site);
		if (site.n_vars != eff.n_env)
			abort();
	}
	if (distenv_policy_effective(&file, "no-such-partition!", &eff) != 0)
		abort();
	distenv_policy_file_free(&file);
	return 0;
}
