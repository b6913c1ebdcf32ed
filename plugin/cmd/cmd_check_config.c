/*
 * cmd_check_config.c: `distenv check-config FILE`: load a site policy
 * file exactly as the plugin does (same owner and mode checks, same
 * parser) and print the effective policy of every partition the file
 * names, and of the others, with where each value comes from. An admin
 * runs it before putting the file on the plugstack line.
 *
 * Exit status: 0 valid, 1 refused or invalid (the error says
 * FILE:LINE:COL, what and the accepted values), 2 usage.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "distenv_policy.h"

/* Where the value of key comes from for partition part (NULL: none). */
static const char *source(const struct distenv_policy_file *f,
			  const struct distenv_policy_partition *part,
			  unsigned key, char *buf, size_t len)
{
	if (part && (part->policy.set & key))
		snprintf(buf, len, "partition %s", part->name);
	else if (f->global.set & key)
		snprintf(buf, len, "top level");
	else
		snprintf(buf, len, "default");
	return buf;
}

static void row(const char *key, const char *value, const char *from)
{
	printf("  %-15s %-32s %s\n", key, value, from);
}

/* The site controls: enabled:, lf_features:, locked: (both true and
 * nothing locked unless the file says). */
static void print_controls(const struct distenv_policy_file *f,
			   const struct distenv_policy_partition *part,
			   const struct distenv_policy *p)
{
	char from[DISTENV_PARTITION_MAX + 16];
	unsigned l = (p->set & DISTENV_POLICY_LOCKED) ? p->locked : 0;
	char locked[64];

	row("enabled",
	    (p->set & DISTENV_POLICY_ENABLED) && !p->enabled ? "false" : "true",
	    source(f, part, DISTENV_POLICY_ENABLED, from, sizeof(from)));
	row("lf_features",
	    (p->set & DISTENV_POLICY_LF_FEATURES) && !p->lf_features ? "false" :
								       "true",
	    source(f, part, DISTENV_POLICY_LF_FEATURES, from, sizeof(from)));
	locked[0] = '\0';
	if (l & DISTENV_SITE_LOCK_PORTS)
		strcat(locked, ", port_range");
	if (l & DISTENV_SITE_LOCK_IFACES)
		strcat(locked, ", interfaces");
	if (l & DISTENV_SITE_LOCK_LF_DIR)
		strcat(locked, ", lf_dir");
	row("locked", locked[0] ? locked + 2 : "(nothing)",
	    source(f, part, DISTENV_POLICY_LOCKED, from, sizeof(from)));
}

static void print_policy(const struct distenv_policy_file *f,
			 const char *partition)
{
	const struct distenv_policy_partition *part =
		distenv_policy_find_partition(f, partition);
	struct distenv_policy p;
	char v[DISTENV_SITE_PATH_MAX + 64], from[DISTENV_PARTITION_MAX + 16];
	size_t i;

	distenv_policy_effective(f, partition, &p);
	if (!partition)
		printf("[partitions not listed below]\n");
	else if (part)
		printf("[partition %s]\n", partition);
	else
		printf("[partition %s: not listed; the top level applies]\n",
		       partition);

	/* The built-in values when the file leaves a key out are those of
	 * distenv_site_defaults(): mode off, 29600-32767. */
	row("default_mode",
	    distenv_mode_name((p.set & DISTENV_POLICY_DEFAULT_MODE) ?
				      p.default_mode :
				      DISTENV_MODE_OFF),
	    source(f, part, DISTENV_POLICY_DEFAULT_MODE, from, sizeof(from)));
	snprintf(v, sizeof(v), "%u-%u",
		 (p.set & DISTENV_POLICY_PORT_RANGE) ? p.port_lo :
						       DISTENV_PORT_LO_DEFAULT,
		 (p.set & DISTENV_POLICY_PORT_RANGE) ? p.port_hi :
						       DISTENV_PORT_HI_DEFAULT);
	row("port_range", v,
	    source(f, part, DISTENV_POLICY_PORT_RANGE, from, sizeof(from)));
	row("interfaces", p.interfaces[0] ? p.interfaces : "(any)",
	    source(f, part, DISTENV_POLICY_INTERFACES, from, sizeof(from)));
	row("address_family", distenv_family_name(p.family),
	    source(f, part, DISTENV_POLICY_ADDRESS_FAMILY, from, sizeof(from)));
	row("master_name", p.master_name[0] ? p.master_name : "{host}",
	    source(f, part, DISTENV_POLICY_MASTER_NAME, from, sizeof(from)));
	if (p.hca_mode == DISTENV_HCA_FIXED)
		snprintf(v, sizeof(v), "fixed %s", p.hca);
	else
		snprintf(v, sizeof(v), "%s", distenv_hca_mode_name(p.hca_mode));
	row("hca", v, source(f, part, DISTENV_POLICY_HCA, from, sizeof(from)));
	row("topology_xml", p.topology_xml[0] ? p.topology_xml : "(native)",
	    source(f, part, DISTENV_POLICY_TOPOLOGY_XML, from, sizeof(from)));
	row("lf_dir", p.lf_dir[0] ? p.lf_dir : "(TMPDIR, else /tmp)",
	    source(f, part, DISTENV_POLICY_LF_DIR, from, sizeof(from)));
	if (p.n_env == 0)
		row("env", "(none)", "-");
	for (i = 0; i < p.n_env; i++) {
		const struct distenv_site_var *e = &p.env[i];
		int in_part = 0;
		size_t j;

		for (j = 0; part && j < part->policy.n_env; j++)
			in_part |=
				strcmp(part->policy.env[j].name, e->name) == 0;
		snprintf(v, sizeof(v), "%s=%s", e->name, e->value);
		if (in_part)
			snprintf(from, sizeof(from), "partition %s",
				 part->name);
		else
			snprintf(from, sizeof(from), "top level");
		row("env", v, from);
	}
	if (p.n_storage == 0)
		row("storage", "(none)", "-");
	for (i = 0; i < p.n_storage; i++) {
		snprintf(v, sizeof(v), "%s %s", p.storage[i].path,
			 distenv_storage_kind_name(p.storage[i].kind));
		row("storage", v,
		    source(f, part, DISTENV_POLICY_STORAGE, from,
			   sizeof(from)));
	}
	print_controls(f, part, &p);
}

int distenv_cmd_check_config(const struct distenv_command *cmd, int argc,
			     char **argv)
{
	struct distenv_cmd_options o;
	const char *slurm_conf = NULL, *value;
	struct distenv_policy_file f;
	struct distenv_error err;
	const char *partition = NULL, *path;
	char abs_path[2 * DISTENV_SITE_PATH_MAX];
	int flags = DISTENV_POLICY_LOAD_STRICT;
	size_t i;
	int id, rc;

	distenv_error_clear(&err);
	distenv_cmd_options_begin(&o, cmd);
	while ((id = distenv_cmd_option(&o, argc, argv, &value, &err)) >= 0) {
		if (id == DISTENV_OPT_PARTITION)
			partition = value;
		else if (id == DISTENV_OPT_TRUST_OWNER)
			flags |= DISTENV_POLICY_LOAD_TRUST_OWNER;
		else if (id == DISTENV_OPT_SLURM_CONF)
			slurm_conf = value;
	}
	rc = distenv_cmd_options_end(&o, id, argc, argv, 0, 1, &err);
	if (rc >= 0)
		return rc;
	/* No FILE: the configuration slurmd runs (cmd_check_slurm.c). */
	if (argc == optind)
		return distenv_check_slurm_conf(slurm_conf);
	if (slurm_conf) {
		distenv_error_set(&err, "--slurm-conf", o.fix,
				  "reads slurm.conf, not FILE: give one of "
				  "them");
		return distenv_cmd_usage_error(&err);
	}
	path = argv[optind];
	/* The loader takes absolute paths only (the plugin's config= is
	 * one); a relative FILE is taken from the current directory. */
	if (path[0] != '/') {
		char cwd[DISTENV_SITE_PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)) ||
		    (size_t) snprintf(abs_path, sizeof(abs_path), "%s/%s", cwd,
				      path) >= sizeof(abs_path)) {
			fprintf(stderr, "distenv: error: %s: path too long\n",
				path);
			return 1;
		}
		path = abs_path;
	}
	distenv_policy_file_init(&f);
	if (distenv_policy_load(path, flags, &f, &err)) {
		distenv_policy_file_free(&f);
		return distenv_cmd_fail(&err);
	}
	printf("# %s: valid, %zu partition section%s\n", path, f.n_partitions,
	       f.n_partitions == 1 ? "" : "s");
	printf("# plugstack arguments default= and port_range=, when given, "
	       "win over this file\n");
	if (partition) {
		print_policy(&f, partition);
	} else {
		print_policy(&f, NULL);
		for (i = 0; i < f.n_partitions; i++)
			print_policy(&f, f.partitions[i].name);
	}
	distenv_policy_file_free(&f);
	return 0;
}
