/* Unit tests: the site policy parser, the effective policy per partition,
 * and how it lands in struct distenv_site (plugin/site/). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_derived.h"
#include "distenv_policy.h"

static struct distenv_policy_file file;
static struct distenv_error err;

static int parse(const char *text)
{
	distenv_error_clear(&err);
	return distenv_policy_parse(text, strlen(text), "t.yaml", &file, &err);
}

/* Parse text, expect an error at where whose what is what. */
static void fails(const char *text, const char *where, const char *what)
{
	if (parse(text) != -1)
		fail_msg("accepted: %s", text);
	if (strcmp(err.where, where) != 0 || strcmp(err.what, what) != 0)
		fail_msg("for %s\n got  %s: %s\n want %s: %s", text, err.where,
			 err.what, where, what);
	assert_int_equal(file.n_partitions, 0);
	assert_int_equal(file.global.set, 0);
}

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf = malloc(65536);

	snprintf(path, sizeof(path), "%s/%s", DISTENV_SITE_TEST_DIR, name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 65535, f);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

static int teardown(void **state)
{
	(void)state;
	distenv_policy_file_free(&file);
	return 0;
}

static void every_key(void **state)
{
	const struct distenv_policy *g = &file.global;
	const struct distenv_policy_partition *a100, *debug;
	size_t len;
	char *text = slurp("good.yaml", &len);

	(void)state;
	if (distenv_policy_parse(text, len, "good.yaml", &file, &err))
		fail_msg("%s: %s", err.where, err.what);
	free(text);
	assert_int_equal(g->set, 0x1ffu);
	assert_int_equal(g->default_mode, DISTENV_MODE_TORCHRUN);
	assert_int_equal(g->port_lo, 29700);
	assert_int_equal(g->port_hi, 29999);
	assert_string_equal(g->interfaces, "^docker,virbr,eth1");
	assert_int_equal(g->family, DISTENV_FAMILY_IPV4);
	assert_string_equal(g->master_name, "{host}-ib");
	assert_int_equal(g->hca_mode, DISTENV_HCA_AUTO);
	assert_string_equal(g->topology_xml, "/etc/slurm/topo/a100.xml");
	assert_int_equal(g->n_env, 2);
	assert_string_equal(g->env[0].name, "NCCL_IB_GID_INDEX");
	assert_string_equal(g->env[0].value, "3");
	assert_string_equal(g->env[1].name, "NCCL_IB_TC");
	assert_string_equal(g->env[1].value, "106");
	assert_int_equal(g->n_storage, 2);
	assert_string_equal(g->storage[0].path, "/lustre");
	assert_int_equal(g->storage[0].kind, DISTENV_STORAGE_SHARED);
	assert_string_equal(g->storage[1].path, "/local/scratch");
	assert_int_equal(g->storage[1].kind, DISTENV_STORAGE_LOCAL);
	assert_int_equal(file.n_partitions, 2);
	a100 = distenv_policy_find_partition(&file, "a100");
	debug = distenv_policy_find_partition(&file, "debug");
	assert_non_null(a100);
	assert_non_null(debug);
	assert_int_equal(a100->line, 19);
	assert_int_equal(a100->policy.set, DISTENV_POLICY_HCA | DISTENV_POLICY_ENV);
	assert_int_equal(a100->policy.hca_mode, DISTENV_HCA_FIXED);
	assert_string_equal(a100->policy.hca, "=mlx5_0,mlx5_2");
	assert_int_equal(debug->policy.default_mode, DISTENV_MODE_OFF);
	assert_int_equal(debug->policy.hca_mode, DISTENV_HCA_OFF);
	assert_string_equal(debug->policy.hca, "");
	assert_int_equal(debug->policy.n_storage, 0);
	assert_true(debug->policy.set & DISTENV_POLICY_STORAGE);
	assert_null(distenv_policy_find_partition(&file, "A100"));
}

static void effective_per_partition(void **state)
{
	struct distenv_policy p;
	size_t len;
	char *text = slurp("good.yaml", &len);

	(void)state;
	if (distenv_policy_parse(text, len, "good.yaml", &file, &err))
		fail_msg("%s: %s", err.where, err.what);
	free(text);

	/* a100: hca replaced, env merged by name (NCCL_IB_TC overridden,
	 * NCCL_IB_SL added after the top level's), the rest inherited. */
	assert_int_equal(distenv_policy_effective(&file, "a100", &p), 1);
	assert_int_equal(p.hca_mode, DISTENV_HCA_FIXED);
	assert_string_equal(p.hca, "=mlx5_0,mlx5_2");
	assert_int_equal(p.n_env, 3);
	assert_string_equal(p.env[0].name, "NCCL_IB_GID_INDEX");
	assert_string_equal(p.env[0].value, "3");
	assert_string_equal(p.env[1].name, "NCCL_IB_TC");
	assert_string_equal(p.env[1].value, "41");
	assert_string_equal(p.env[2].name, "NCCL_IB_SL");
	assert_string_equal(p.env[2].value, "1");
	assert_int_equal(p.port_lo, 29700);
	assert_string_equal(p.master_name, "{host}-ib");
	assert_int_equal(p.n_storage, 2);

	/* debug: every scalar key replaced, storage emptied. */
	assert_int_equal(distenv_policy_effective(&file, "debug", &p), 1);
	assert_int_equal(p.default_mode, DISTENV_MODE_OFF);
	assert_int_equal(p.port_lo, 39000);
	assert_int_equal(p.port_hi, 39099);
	assert_string_equal(p.interfaces, "=eth0");
	assert_int_equal(p.family, DISTENV_FAMILY_ANY);
	assert_string_equal(p.master_name, "{host}");
	assert_int_equal(p.hca_mode, DISTENV_HCA_OFF);
	assert_string_equal(p.topology_xml, "/etc/slurm/topo/debug.xml");
	assert_int_equal(p.n_env, 2); /* inherited */
	assert_int_equal(p.n_storage, 0);

	/* A partition the file does not list, and no partition: the top
	 * level. */
	assert_int_equal(distenv_policy_effective(&file, "cpu", &p), 0);
	assert_int_equal(p.default_mode, DISTENV_MODE_TORCHRUN);
	assert_int_equal(p.hca_mode, DISTENV_HCA_AUTO);
	assert_int_equal(p.n_env, 2);
	assert_string_equal(p.env[1].value, "106");
	assert_int_equal(distenv_policy_effective(&file, NULL, &p), 0);
	assert_int_equal(p.port_hi, 29999);
	/* No file: nothing set. */
	assert_int_equal(distenv_policy_effective(NULL, "a100", &p), 0);
	assert_int_equal(p.set, 0);
}

/* Plugstack arguments given on the line win over the file; the rest of
 * the file lands in the site. */
static void apply_to_site(void **state)
{
	char *args[] = {"port_range=50000-50010", "config=/etc/slurm/d.yaml"};
	const char *env[] = {"SLURM_JOB_PARTITION=a100", NULL};
	struct distenv_site base, site;
	size_t len;
	char *text = slurp("good.yaml", &len);

	(void)state;
	if (distenv_policy_parse(text, len, "good.yaml", &file, &err))
		fail_msg("%s: %s", err.where, err.what);
	free(text);
	assert_int_equal(distenv_parse_plugstack(2, args, &base, &err), 0);
	assert_string_equal(base.config, "/etc/slurm/d.yaml");
	assert_int_equal(base.given, DISTENV_SITE_GIVEN_PORTS);

	distenv_policy_site_for_env(&file, &base, env, &site);
	assert_string_equal(site.partition, "a100");
	assert_int_equal(site.default_mode, DISTENV_MODE_TORCHRUN); /* file */
	assert_int_equal(site.port_lo, 50000); /* plugstack wins */
	assert_int_equal(site.port_hi, 50010);
	assert_string_equal(site.ifaces, "^docker,virbr,eth1");
	assert_int_equal(site.family, DISTENV_FAMILY_IPV4);
	assert_string_equal(site.master_name, "{host}-ib");
	assert_int_equal(site.hca_mode, DISTENV_HCA_FIXED);
	assert_string_equal(site.hca, "=mlx5_0,mlx5_2");
	assert_string_equal(site.topology_xml, "/etc/slurm/topo/a100.xml");
	assert_int_equal(site.n_vars, 3);
	assert_string_equal(site.vars[2].name, "NCCL_IB_SL");
	assert_string_equal(site.config, "/etc/slurm/d.yaml");

	/* default= on the line wins over the partition's default_mode. */
	args[0] = "default=tasks";
	assert_int_equal(distenv_parse_plugstack(1, args, &base, &err), 0);
	distenv_policy_site_for_env(&file, &base, env, &site);
	assert_int_equal(site.default_mode, DISTENV_MODE_TASKS);
	assert_int_equal(site.port_lo, 29700); /* file, not the built-in */

	/* No SLURM_JOB_PARTITION: the top level; no file: base unchanged. */
	distenv_policy_site_for_env(&file, &base, NULL, &site);
	assert_string_equal(site.partition, "");
	assert_int_equal(site.hca_mode, DISTENV_HCA_AUTO);
	assert_int_equal(site.n_vars, 2);
	distenv_policy_site_for_env(NULL, &base, env, &site);
	assert_int_equal(site.n_vars, 0);
	assert_string_equal(site.ifaces, "");
	assert_int_equal(site.port_lo, DISTENV_PORT_LO_DEFAULT);
}

/* config= on the plugstack line (distenv_parse_plugstack). */
static void plugstack_config_argument(void **state)
{
	struct distenv_site site;
	char *relative[] = {"config=etc/distenv.yaml"};
	char *empty[] = {"default=tasks", "config="};
	char *good[] = {"config=/etc/slurm/distenv.yaml", "default=off"};

	(void)state;
	assert_int_equal(distenv_parse_plugstack(1, relative, &site, &err), -1);
	assert_string_equal(err.where,
			    "plugstack.conf argument 'config=etc/distenv.yaml'");
	assert_string_equal(err.what, "not an absolute path");
	assert_string_equal(site.config, "");
	assert_int_equal(distenv_parse_plugstack(2, empty, &site, &err), -1);
	assert_string_equal(err.what, "not an absolute path");
	assert_int_equal(distenv_parse_plugstack(2, good, &site, &err), 0);
	assert_string_equal(site.config, "/etc/slurm/distenv.yaml");
	assert_int_equal(site.given, DISTENV_SITE_GIVEN_MODE);
	assert_int_equal(distenv_parse_plugstack(0, NULL, &site, &err), 0);
	assert_string_equal(site.config, "");
	assert_int_equal(site.given, 0);
}

static void empty_files(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(file.global.set, 0);
	assert_int_equal(parse("# nothing here\n\n"), 0);
	assert_int_equal(parse("---\n...\n"), 0);
	assert_int_equal(parse("{}"), 0);
	assert_int_equal(parse("version: 1\n"), 0);
	assert_int_equal(file.global.set, 0);
}

static void scalar_forms(void **state)
{
	(void)state;
	assert_int_equal(parse("hca: \"=mlx5_0:1,mlx5_1:1\"\n"), 0);
	assert_int_equal(file.global.hca_mode, DISTENV_HCA_FIXED);
	assert_string_equal(file.global.hca, "=mlx5_0:1,mlx5_1:1");
	assert_int_equal(parse("hca: ^mlx5_3\n"), 0);
	assert_string_equal(file.global.hca, "^mlx5_3");
	assert_int_equal(parse("hca: 'off'\naddress_family: ipv6\n"), 0);
	assert_int_equal(file.global.hca_mode, DISTENV_HCA_OFF);
	assert_int_equal(file.global.family, DISTENV_FAMILY_IPV6);
	/* An env value is text, whatever YAML would make of it. */
	assert_int_equal(parse("env: {A: yes, B: 1.50, C: 'x y'}\n"), 0);
	assert_string_equal(file.global.env[0].value, "yes");
	assert_string_equal(file.global.env[1].value, "1.50");
	assert_string_equal(file.global.env[2].value, "x y");
	assert_int_equal(parse("master_name: \"{host}.ib.example.org\"\n"), 0);
	assert_int_equal(parse("master_name: \"ib-{host}\"\n"), 0);
	assert_int_equal(parse("partitions: {gpu.a-1_x: {}}\n"), 0);
	assert_int_equal(file.n_partitions, 1);
}

static void unknown_keys(void **state)
{
	(void)state;
	fails("default_mode: tasks\ncolour: blue\n", "t.yaml:2:1",
	      "unknown key 'colour'");
	assert_non_null(strstr(err.fix, "accepted keys: version, default_mode, "
					"port_range, interfaces"));
	fails("partitions:\n  gpu:\n    hcas: auto\n", "t.yaml:3:5",
	      "unknown key 'hcas'");
	assert_non_null(strstr(err.fix, "accepted keys in a partition:"));
	fails("partitions:\n  gpu:\n    partitions: {}\n", "t.yaml:3:5",
	      "partitions is not accepted in a partition");
	fails("partitions:\n  gpu: {version: 1}\n", "t.yaml:2:9",
	      "version is not accepted in a partition");
	fails("storage:\n  - {path: /x, type: local, size: 3}\n", "t.yaml:2:29",
	      "storage: unknown or repeated key 'size'");
}

static void wrong_types(void **state)
{
	(void)state;
	fails("port_range: [1024, 2000]\n", "t.yaml:1:13",
	      "port_range: expected a single value, found a list");
	assert_non_null(strstr(err.fix, "LO-HI"));
	fails("default_mode: {a: b}\n", "t.yaml:1:15",
	      "default_mode: expected a single value, found a mapping");
	assert_string_equal(err.fix, "accepted values: off, torchrun, tasks");
	fails("env: [A, B]\n", "t.yaml:1:6", "env: expected a mapping, found a list");
	fails("env:\n", "t.yaml:1:5", "env: expected a mapping, found no value");
	fails("storage: /lustre\n", "t.yaml:1:10",
	      "storage: expected a list, found a single value");
	fails("partitions: [gpu]\n", "t.yaml:1:13",
	      "partitions: expected a mapping, found a list");
	fails("partitions:\n  gpu:\n", "t.yaml:2:7",
	      "gpu: expected a mapping, found no value");
	fails("- a\n- b\n", "t.yaml:1:1",
	      "the file must be a mapping of keys, found a list");
	fails("hello\n", "t.yaml:1:1",
	      "the file must be a mapping of keys, found a single value");
	fails("hca: [[mlx5_0]]\n", "t.yaml:1:7",
	      "hca: expected a single value, found a list");
	fails("env:\n  [A]: 1\n", "t.yaml:2:3",
	      "env: a key must be a name, found a list");
	fails("topology_xml:\n", "t.yaml:1:14", "topology_xml: no value given");
}

static void invalid_values(void **state)
{
	(void)state;
	fails("default_mode: sometimes\n", "t.yaml:1:15",
	      "default_mode: unknown mode 'sometimes'");
	fails("port_range: 80-90\n", "t.yaml:1:13",
	      "port_range: '80-90' is not a valid port range");
	fails("port_range: 30000\n", "t.yaml:1:13",
	      "port_range: '30000' is not a range LO-HI");
	fails("address_family: ipv5\n", "t.yaml:1:17",
	      "address_family: unknown value 'ipv5'");
	assert_string_equal(err.fix, "accepted values: ipv4, ipv6, any");
	fails("interfaces: eth0,,eth1\n", "t.yaml:1:13",
	      "interfaces: 'eth0,,eth1' has an empty name");
	fails("interfaces: \"eth 0\"\n", "t.yaml:1:13",
	      "interfaces: 'eth 0' has the character ' ' (0x20), which no "
	      "interface name holds");
	fails("master_name: ib-node\n", "t.yaml:1:14",
	      "master_name: 'ib-node' does not hold {host}");
	fails("master_name: \"{host}_ib\"\n", "t.yaml:1:14",
	      "master_name: '{host}_ib' has the character '_' (0x5f), which no "
	      "host name holds");
	fails("master_name: \"{host}{host}\"\n", "t.yaml:1:14",
	      "master_name: '{host}{host}' holds {host} twice");
	fails("hca: [mlx5_0, \"^mlx5_1\"]\n", "t.yaml:1:6",
	      "hca: '=mlx5_0,^mlx5_1' has the character '^' (0x5e), which no "
	      "interface name holds");
	fails("hca: []\n", "t.yaml:1:6", "hca: '=' names no interface");
	fails("topology_xml: topo.xml\n", "t.yaml:1:15",
	      "topology_xml: 'topo.xml' is not an absolute path");
	fails("version: 2\n", "t.yaml:1:10", "version: unknown version '2'");
	fails("storage:\n  - path: lustre\n    type: shared\n", "t.yaml:2:11",
	      "storage path: 'lustre' is not an absolute path");
	fails("storage:\n  - path: /lustre\n    type: nfs\n", "t.yaml:3:11",
	      "storage type: unknown value 'nfs'");
	fails("storage:\n  - path: /lustre\n", "t.yaml:2:5",
	      "storage: a mount without type");
	fails("storage:\n  - {path: /a, type: local}\n  - {path: /a, type: shared}\n",
	      "t.yaml:3:5", "storage: /a is given twice");
	fails("partitions:\n  \"gpu a\": {}\n", "t.yaml:2:3",
	      "partitions: 'gpu a' is not a partition name");
	fails("partitions:\n  gpu: {}\n  gpu: {}\n", "t.yaml:3:3",
	      "partitions: gpu is given twice");
}

/* lf_dir: the directory of --distenv-lf-config's resolved copies: an
 * absolute path the option would take too, per partition, into the
 * site, and lockable against --distenv-lf-dir. */
static void lf_dir_key(void **state)
{
	const char *env[] = { "SLURM_JOB_PARTITION=ctr", NULL };
	struct distenv_request req;
	struct distenv_site base, site;
	struct distenv_policy p;

	(void) state;
	if (parse("lf_dir: /scratch/distenv\n"
		  "partitions:\n"
		  "  ctr:\n"
		  "    lf_dir: /shared/distenv\n"
		  "    locked: [lf_dir]\n"))
		fail_msg("%s: %s", err.where, err.what);
	assert_int_equal(file.global.set, DISTENV_POLICY_LF_DIR);
	assert_string_equal(file.global.lf_dir, "/scratch/distenv");
	assert_int_equal(distenv_policy_effective(&file, "ctr", &p), 1);
	assert_string_equal(p.lf_dir, "/shared/distenv");
	assert_int_equal(p.locked, DISTENV_SITE_LOCK_LF_DIR);
	distenv_policy_effective(&file, "other", &p);
	assert_string_equal(p.lf_dir, "/scratch/distenv");
	assert_int_equal(p.locked, 0);

	distenv_site_defaults(&base);
	distenv_policy_site_for_env(&file, &base, env, &site);
	assert_string_equal(site.lf_dir, "/shared/distenv");
	distenv_policy_site_for_env(NULL, &base, env, &site);
	assert_string_equal(site.lf_dir, "");

	/* locked: the user's --distenv-lf-dir is refused, naming it */
	distenv_policy_site_for_env(&file, &base, env, &site);
	memset(&req, 0, sizeof(req));
	assert_int_equal(distenv_site_check_request(&site, &req, &err), 0);
	snprintf(req.lf_dir, sizeof(req.lf_dir), "/home/u/x");
	assert_int_equal(distenv_site_check_request(&site, &req, &err), -1);
	assert_string_equal(err.where, "--distenv-lf-dir");
	assert_non_null(strstr(err.what, "locked: [lf_dir]"));
	assert_non_null(strstr(err.fix, "leave --distenv-lf-dir out"));
	/* not locked at the top level: taken */
	distenv_policy_site_for_env(&file, &base, NULL, &site);
	assert_int_equal(distenv_site_check_request(&site, &req, &err), 0);
	distenv_policy_file_free(&file);

	fails("lf_dir: scratch/distenv\n", "t.yaml:1:9",
	      "lf_dir: 'scratch/distenv' is not an absolute path");
	assert_non_null(strstr(err.fix, "absolute directory"));
	fails("lf_dir: \"/scratch/my dir\"\n", "t.yaml:1:9",
	      "lf_dir: '/scratch/my dir' has the character ' ' (0x20), which "
	      "the shell treats specially and no value of this option holds");
	fails("lf_dir:\n", "t.yaml:1:8", "lf_dir: no value given");
	fails("lf_dir: [/a]\n", "t.yaml:1:9",
	      "lf_dir: expected a single value, found a list");
	fails("locked: [lf_dirs]\n", "t.yaml:1:10",
	      "locked: 'lf_dirs' cannot be locked");
	assert_string_equal(
		err.fix, "write a YAML list of port_range, interfaces, lf_dir");
}

static void env_names_and_values(void **state)
{
	(void)state;
	fails("env:\n  1BAD: x\n", "t.yaml:2:3",
	      "env: '1BAD' is not a valid environment variable name");
	fails("env:\n  NCCL-IB: x\n", "t.yaml:2:3",
	      "env: 'NCCL-IB' is not a valid environment variable name");
	fails("env:\n  MASTER_PORT: 29500\n", "t.yaml:2:3",
	      "env: MASTER_PORT cannot be set by the site policy");
	assert_non_null(strstr(err.fix, "port_range:"));
	fails("env:\n  NCCL_IB_HCA: mlx5_0\n", "t.yaml:2:3",
	      "env: NCCL_IB_HCA cannot be set by the site policy");
	assert_non_null(strstr(err.fix, "hca:"));
	fails("env: {SLURM_X: 1}\n", "t.yaml:1:7",
	      "env: SLURM_X cannot be set by the site policy");
	fails("env: {TORCHELASTIC_RUN_ID: 1}\n", "t.yaml:1:7",
	      "env: TORCHELASTIC_RUN_ID cannot be set by the site policy");
	fails("env: {DISTENV_SET: 1}\n", "t.yaml:1:7",
	      "env: DISTENV_SET cannot be set by the site policy");
	fails("env:\n  A: 1\n  A: 2\n", "t.yaml:3:3", "env: A is given twice");
	fails("env:\n  A: \"x\\ny\"\n", "t.yaml:2:6",
	      "env: value holds a line break");
	fails("env:\n  A: \"x\\0y\"\n", "t.yaml:2:6",
	      "env: A: the value holds a NUL character");
	fails("env:\n  A:\n", "t.yaml:2:5", "env: A: no value given");
}

/* Every variable the derivation sets is refused in env:, with the fix
 * of its entry in distenv_derived.h; the elastic ones too. */
static void env_derived_names(void **state)
{
	char text[128], what[128];
	size_t i;

	(void)state;
	assert_true(distenv_derived_count >= 30);
	for (i = 0; i < distenv_derived_count; i++) {
		const struct distenv_derived_var *v = &distenv_derived_vars[i];

		snprintf(text, sizeof(text), "env:\n  %s: x\n", v->name);
		snprintf(what, sizeof(what),
			 "env: %s cannot be set by the site policy", v->name);
		fails(text, "t.yaml:2:3", what);
		assert_string_equal(err.fix, v->site_fix);
		teardown(NULL);
	}
	fails("env:\n  MAX_RESTARTS: 3\n", "t.yaml:2:3",
	      "env: MAX_RESTARTS cannot be set by the site policy");
	assert_non_null(strstr(err.fix, "--distenv-max-restarts"));
}

static void duplicates_and_yaml_features(void **state)
{
	(void)state;
	fails("hca: auto\nhca: off\n", "t.yaml:2:1", "hca is given twice");
	fails("version: 1\nversion: 1\n", "t.yaml:2:1", "version is given twice");
	fails("env: &e {A: 1}\n", "t.yaml:1:6", "an anchor (&e) is not accepted");
	fails("env: {B: *x}\n", "t.yaml:1:10",
	      "env: an alias (*x) is not accepted");
	fails("port_range: !!str 3000-4000\n", "t.yaml:1:13",
	      "a tag (tag:yaml.org,2002:str) is not accepted");
	fails("hca: auto\n---\nhca: off\n", "t.yaml:2:1", "a second YAML document");
	/* libyaml's own errors keep its position. */
	fails("env: {A: 1\n", "t.yaml:2:1",
	      "YAML: while parsing a flow mapping did not find expected ',' or '}'");
	fails("env:\n\tA: 1\n", "t.yaml:2:1",
	      "YAML: while scanning for the next token found character that "
	      "cannot start any token");
}

/* 20 top-level variables G0..G19; the partition gpu sets P0..P(fresh-1)
 * and overrides G0 when override is set. */
static const char *env_text(int fresh, int override)
{
	static char text[4096];
	size_t n = 0;
	int i;

	n += (size_t)snprintf(text + n, sizeof(text) - n, "env:\n");
	for (i = 0; i < 20; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "  G%d: 1\n", i);
	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "partitions:\n  gpu:\n    env:\n");
	for (i = 0; i < fresh; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "      P%d: 1\n", i);
	if (override)
		snprintf(text + n, sizeof(text) - n, "      G0: 2\n");
	return text;
}

static void merged_env_limit(void **state)
{
	struct distenv_policy p;

	(void)state;
	fails(env_text(13, 0), "t.yaml:23:1",
	      "partition gpu: 33 variables with the top-level env:, more than 32");
	/* Overriding a top-level name does not count twice. */
	assert_int_equal(parse(env_text(12, 1)), 0);
	assert_int_equal(distenv_policy_effective(&file, "gpu", &p), 1);
	assert_int_equal(p.n_env, 32);
	assert_string_equal(p.env[0].name, "G0");
	assert_string_equal(p.env[0].value, "2");
	assert_string_equal(p.env[31].name, "P11");
}

static void bytes_that_are_not_text(void **state)
{
	const char bin[] = "env: {A: 1}\n\x01\x02";

	(void)state;
	assert_int_equal(distenv_policy_parse(bin, sizeof(bin) - 1, "t.yaml",
					      &file, &err),
			 -1);
	assert_string_equal(err.where, "t.yaml:2:1");
	assert_string_equal(err.what, "control characters are not allowed");
	assert_int_equal(distenv_policy_parse("a: \xff\n", 4, "t.yaml", &file,
					      &err),
			 -1);
	assert_string_equal(err.where, "t.yaml:1:4");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(every_key, teardown),
		cmocka_unit_test_teardown(effective_per_partition, teardown),
		cmocka_unit_test_teardown(apply_to_site, teardown),
		cmocka_unit_test_teardown(plugstack_config_argument, teardown),
		cmocka_unit_test_teardown(empty_files, teardown),
		cmocka_unit_test_teardown(scalar_forms, teardown),
		cmocka_unit_test_teardown(unknown_keys, teardown),
		cmocka_unit_test_teardown(wrong_types, teardown),
		cmocka_unit_test_teardown(invalid_values, teardown),
		cmocka_unit_test_teardown(lf_dir_key, teardown),
		cmocka_unit_test_teardown(env_names_and_values, teardown),
		cmocka_unit_test_teardown(env_derived_names, teardown),
		cmocka_unit_test_teardown(duplicates_and_yaml_features, teardown),
		cmocka_unit_test_teardown(merged_env_limit, teardown),
		cmocka_unit_test_teardown(bytes_that_are_not_text, teardown),
	};

	return cmocka_run_group_tests_name("policy_parse", tests, NULL, NULL);
}
