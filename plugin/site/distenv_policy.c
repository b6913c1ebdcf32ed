/* distenv_policy.c: the effective site policy for a partition (pure). */
#include "distenv_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_env.h"

void distenv_policy_file_init(struct distenv_policy_file *file)
{
	memset(file, 0, sizeof(*file));
}

void distenv_policy_file_free(struct distenv_policy_file *file)
{
	free(file->partitions);
	memset(file, 0, sizeof(*file));
}

const struct distenv_policy_partition *distenv_policy_find_partition(
	const struct distenv_policy_file *file, const char *partition)
{
	size_t i;

	if (!file || !partition || !partition[0])
		return NULL;
	for (i = 0; i < file->n_partitions; i++)
		if (strcmp(file->partitions[i].name, partition) == 0)
			return &file->partitions[i];
	return NULL;
}

/* Set name=value in env (replacing a value of the same name). Returns -1
 * when env is full; the parser checks the merged count, so callers on
 * parsed files never see it. */
static int env_put(struct distenv_policy *p, const struct distenv_site_var *v)
{
	size_t i;

	for (i = 0; i < p->n_env; i++)
		if (strcmp(p->env[i].name, v->name) == 0) {
			p->env[i] = *v;
			return 0;
		}
	if (p->n_env == DISTENV_SITE_VARS_MAX)
		return -1;
	p->env[p->n_env++] = *v;
	return 0;
}

int distenv_policy_effective(const struct distenv_policy_file *file,
			     const char *partition, struct distenv_policy *out)
{
	const struct distenv_policy_partition *part =
		distenv_policy_find_partition(file, partition);
	const struct distenv_policy *o;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!file)
		return 0;
	*out = file->global;
	if (!part)
		return 0;
	o = &part->policy;
	if (o->set & DISTENV_POLICY_DEFAULT_MODE)
		out->default_mode = o->default_mode;
	if (o->set & DISTENV_POLICY_PORT_RANGE) {
		out->port_lo = o->port_lo;
		out->port_hi = o->port_hi;
	}
	if (o->set & DISTENV_POLICY_INTERFACES)
		memcpy(out->interfaces, o->interfaces, sizeof(out->interfaces));
	if (o->set & DISTENV_POLICY_ADDRESS_FAMILY)
		out->family = o->family;
	if (o->set & DISTENV_POLICY_MASTER_NAME)
		memcpy(out->master_name, o->master_name,
		       sizeof(out->master_name));
	if (o->set & DISTENV_POLICY_HCA) {
		out->hca_mode = o->hca_mode;
		memcpy(out->hca, o->hca, sizeof(out->hca));
	}
	if (o->set & DISTENV_POLICY_TOPOLOGY_XML)
		memcpy(out->topology_xml, o->topology_xml,
		       sizeof(out->topology_xml));
	for (i = 0; i < o->n_env; i++)
		if (env_put(out, &o->env[i]))
			break;
	if (o->set & DISTENV_POLICY_STORAGE) {
		out->n_storage = o->n_storage;
		memcpy(out->storage, o->storage, sizeof(out->storage));
	}
	if (o->set & DISTENV_POLICY_LF_DIR)
		memcpy(out->lf_dir, o->lf_dir, sizeof(out->lf_dir));
	if (o->set & DISTENV_POLICY_ENABLED)
		out->enabled = o->enabled;
	if (o->set & DISTENV_POLICY_LF_FEATURES)
		out->lf_features = o->lf_features;
	if (o->set & DISTENV_POLICY_LOCKED)
		out->locked = o->locked;
	out->set |= o->set;
	return 1;
}

void distenv_policy_apply(const struct distenv_policy *policy,
			  const char *partition, struct distenv_site *site)
{
	const struct distenv_policy *p = policy;

	snprintf(site->partition, sizeof(site->partition), "%s",
		 partition ? partition : "");
	if ((p->set & DISTENV_POLICY_DEFAULT_MODE) &&
	    !(site->given & DISTENV_SITE_GIVEN_MODE))
		site->default_mode = p->default_mode;
	if ((p->set & DISTENV_POLICY_PORT_RANGE) &&
	    !(site->given & DISTENV_SITE_GIVEN_PORTS)) {
		site->port_lo = p->port_lo;
		site->port_hi = p->port_hi;
	}
	memcpy(site->ifaces, p->interfaces, sizeof(site->ifaces));
	site->family = p->family;
	memcpy(site->master_name, p->master_name, sizeof(site->master_name));
	site->hca_mode = p->hca_mode;
	memcpy(site->hca, p->hca, sizeof(site->hca));
	memcpy(site->topology_xml, p->topology_xml, sizeof(site->topology_xml));
	memcpy(site->lf_dir, p->lf_dir, sizeof(site->lf_dir));
	site->n_vars = p->n_env;
	memcpy(site->vars, p->env, sizeof(site->vars));
	site->disabled = (p->set & DISTENV_POLICY_ENABLED) && !p->enabled;
	site->lf_disabled =
		(p->set & DISTENV_POLICY_LF_FEATURES) && !p->lf_features;
	site->locked = (p->set & DISTENV_POLICY_LOCKED) ? p->locked : 0;
	/* A partition switched off gets no site default either. */
	if (site->disabled)
		site->default_mode = DISTENV_MODE_OFF;
}

void distenv_policy_site_for_env(const struct distenv_policy_file *file,
				 const struct distenv_site *base,
				 const char *const *envp,
				 struct distenv_site *out)
{
	/* Set by slurmstepd for every task of the job (sbatch(1), srun(1)
	 * OUTPUT ENVIRONMENT VARIABLES). */
	const char *partition = distenv_env_get(envp, "SLURM_JOB_PARTITION");
	struct distenv_policy eff; /* about 20 KiB: fine on a task's stack */

	*out = *base;
	if (!file)
		return;
	distenv_policy_effective(file, partition, &eff);
	distenv_policy_apply(&eff, partition, out);
}

const char *distenv_family_name(enum distenv_family family)
{
	switch (family) {
	case DISTENV_FAMILY_IPV4:
		return "ipv4";
	case DISTENV_FAMILY_IPV6:
		return "ipv6";
	default:
		return "any";
	}
}

const char *distenv_hca_mode_name(enum distenv_hca_mode mode)
{
	switch (mode) {
	case DISTENV_HCA_FIXED:
		return "fixed";
	case DISTENV_HCA_OFF:
		return "off";
	default:
		return "auto";
	}
}

const char *distenv_storage_kind_name(enum distenv_storage_kind kind)
{
	return kind == DISTENV_STORAGE_LOCAL ? "local" : "shared";
}
