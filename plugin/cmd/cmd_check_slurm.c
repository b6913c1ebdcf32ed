/*
 * cmd_check_slurm.c: `distenv check-config` without a FILE (or with
 * --slurm-conf PATH): the configuration slurmd really runs, found the
 * way slurmd finds it, and checked against what jobs will meet.
 *
 * - slurm.conf: PATH, else $SLURM_CONF, else /etc/slurm/slurm.conf
 *   (slurm.conf(5)). Read from it (and from files it includes, one
 *   level): PlugStackConfig (default: plugstack.conf beside slurm.conf)
 *   and the PartitionName= names.
 * - plugstack.conf (spank(8)): "required|optional PLUGIN [ARGS]" lines
 *   and "include GLOB" lines, followed two levels deep; the line that
 *   loads distenv.so, with its file:line.
 * - Its arguments through the plugin's own parser; its config= file
 *   through the plugin's own loader; then the effective settings of
 *   every partition slurm.conf names, with the source of each.
 * - Warnings for what the run-time checks would meet: a plugstack
 *   default= or port_range= that overrides the file's value, a site file
 *   other users cannot read (every non-root --distenv job fails on it), a
 *   parent directory not owned by root or writable by others (someone
 *   else could swap the file), a topology_xml or storage: path that does
 *   not exist here, a section for a partition slurm.conf does not have.
 * Exit: 0 (warnings allowed), 1 on an error, 2 on a usage error.
 */
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "commands.h"
#include "distenv_policy.h"
#include "distenv_sys.h"
#include "distenv_sys_file.h"

#define LINE_MAX_ARGS 32

struct found {
	char slurm_conf[4096];
	char plugstack[4096];
	/* PartitionName= names, as many as slurm.conf has */
	char (*parts)[DISTENV_PARTITION_MAX];
	size_t n_parts, cap_parts;
	int parts_lost; /* out of memory: do not judge sections by name */
	char where[4200]; /* FILE:LINE of distenv's line */
	char line[4096]; /* the line itself */
	int have_line;
	/* a container plugin's line (pyxis) and where, the first one */
	char container[4200];
	int container_before; /* it comes before distenv's line */
	int warnings;
};

static void warn(struct found *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warn(struct found *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stdout, "warning: ");
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, "\n");
	va_end(ap);
	f->warnings++;
}

/* The whole of a configuration file, or NULL with err. */
static char *read_conf(const char *path, const char *role,
		       struct distenv_error *err)
{
	struct distenv_file_rules rules = { role, NULL, 1024 * 1024,
					    DISTENV_FILE_ANY_OWNER };
	struct distenv_file file = { 0 };

	if (distenv_file_read(path, &rules, &file, err))
		return NULL;
	return file.data;
}

/* slurm.conf keys are case-insensitive (slurm.conf(5)). */
static const char *key_value(const char *tok, const char *key)
{
	size_t n = strlen(key);

	return strncasecmp(tok, key, n) == 0 && tok[n] == '=' ? tok + n + 1 :
								NULL;
}

static void add_part(struct found *f, const char *name)
{
	if (f->n_parts == f->cap_parts) {
		size_t cap = f->cap_parts ? f->cap_parts * 2 : 64;
		void *p = realloc(f->parts, cap * sizeof(*f->parts));

		if (!p) {
			f->parts_lost = 1;
			return;
		}
		f->parts = p;
		f->cap_parts = cap;
	}
	snprintf(f->parts[f->n_parts++], sizeof(f->parts[0]), "%s", name);
}

static void slurm_conf_file(struct found *f, const char *path, int depth)
{
	struct distenv_error err;
	char *text = read_conf(path, "slurm.conf", &err), *line, *save = NULL;

	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), *tok, *s2 = NULL;
		const char *v;

		if (hash)
			*hash = '\0';
		tok = strtok_r(line, " \t", &s2);
		if (!tok)
			continue;
		if (strcasecmp(tok, "include") == 0) {
			tok = strtok_r(NULL, " \t", &s2);
			if (tok && depth < 1)
				slurm_conf_file(f, tok, depth + 1);
			continue;
		}
		for (; tok; tok = strtok_r(NULL, " \t", &s2)) {
			if ((v = key_value(tok, "PlugStackConfig")))
				snprintf(f->plugstack, sizeof(f->plugstack),
					 "%s", v);
			else if ((v = key_value(tok, "PartitionName")) &&
				 strcasecmp(v, "DEFAULT"))
				add_part(f, v);
		}
	}
	free(text);
}

static int is_distenv(const char *plugin)
{
	const char *base = strrchr(plugin, '/');

	return strcmp(base ? base + 1 : plugin, "distenv.so") == 0;
}

/* Note a container plugin's line, and whether it precedes distenv's. */
static void note_container(struct found *f, const char *path, unsigned n,
			   const char *plugin)
{
	if (f->container[0])
		return;
	snprintf(f->container, sizeof(f->container), "%s (%s:%u)", plugin, path,
		 n);
	f->container_before = !f->have_line;
}

/* Find distenv's line in path and what it includes (depth <= 2). */
static void plugstack_file(struct found *f, const char *path, int depth)
{
	struct distenv_error err;
	char *text = read_conf(path, "the plugstack configuration", &err);
	char *line, *save = NULL;
	unsigned n = 0;

	if (!text) {
		if (depth == 0) {
			char msg[3 * DISTENV_ERROR_TEXT];

			distenv_error_format(&err, msg, sizeof(msg));
			warn(f, "%s", msg);
		}
		return;
	}
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char copy[4096], *tok, *s2 = NULL, *hash;

		n++;
		snprintf(copy, sizeof(copy), "%s", line);
		if ((hash = strchr(copy, '#')))
			*hash = '\0';
		tok = strtok_r(copy, " \t", &s2);
		if (!tok)
			continue;
		if (strcmp(tok, "include") == 0) {
			glob_t g;
			size_t i;

			tok = strtok_r(NULL, " \t", &s2);
			if (!tok || depth >= 2 || glob(tok, 0, NULL, &g))
				continue;
			for (i = 0; i < g.gl_pathc; i++)
				plugstack_file(f, g.gl_pathv[i], depth + 1);
			globfree(&g);
			continue;
		}
		if (strcmp(tok, "required") && strcmp(tok, "optional"))
			continue;
		tok = strtok_r(NULL, " \t", &s2);
		/* Whatever Slurm calls after such a plugin in task_init runs
		 * in the container (pyxis_slurmstepd.c setns()es the task
		 * into it; Slurm calls the plugins' task_init in plugstack
		 * order, src/common/plugstack.c). */
		if (tok && distenv_is_container_plugin(tok))
			note_container(f, path, n, tok);
		if (!tok || !is_distenv(tok))
			continue;
		if (f->have_line)
			warn(f,
			     "%s:%u: a second line loads distenv.so (the "
			     "first is %s): Slurm loads both",
			     path, n, f->where);
		else {
			snprintf(f->where, sizeof(f->where), "%s:%u", path, n);
			snprintf(f->line, sizeof(f->line), "%s", line);
			f->have_line = 1;
		}
	}
	free(text);
}

/* The line's words after "required PATH", as the plugin gets them. */
static int line_args(char *line, char **argv)
{
	char *tok, *save = NULL, *hash = strchr(line, '#');
	int argc = 0, word = 0;

	if (hash)
		*hash = '\0';
	for (tok = strtok_r(line, " \t", &save); tok && argc < LINE_MAX_ARGS;
	     tok = strtok_r(NULL, " \t", &save))
		if (word++ >= 2)
			argv[argc++] = tok;
	return argc;
}

/* Files a root-owned site file's security rests on: each parent
 * directory must be root's and not writable by others, unless sticky. */
static void check_parents(struct found *f, const char *path)
{
	char dir[4096], *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	while ((slash = strrchr(dir, '/'))) {
		*(slash == dir ? slash + 1 : slash) = '\0';
		if (stat(dir, &st) == 0 &&
		    (st.st_uid != 0 || ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
					!(st.st_mode & S_ISVTX))))
			warn(f,
			     "%s: directory of the site file is %s: another "
			     "user could put another file in its place. Keep "
			     "the file in a directory only root can write",
			     dir,
			     st.st_uid ? "not owned by root" :
					 "writable by others");
		if (slash == dir)
			break;
	}
}

static void check_paths(struct found *f, const struct distenv_policy *p,
			const char *scope)
{
	struct stat st;
	size_t i;

	if (p->topology_xml[0] &&
	    (stat(p->topology_xml, &st) || !S_ISREG(st.st_mode)))
		warn(f,
		     "%s: topology_xml %s is not a file on this host: jobs "
		     "there get no NCCL_IB_HCA",
		     scope, p->topology_xml);
	if (p->lf_dir[0] && (stat(p->lf_dir, &st) || !S_ISDIR(st.st_mode)))
		warn(f,
		     "%s: lf_dir %s is not a directory on this host: "
		     "--distenv-lf-config steps there fail",
		     scope, p->lf_dir);
	for (i = 0; i < p->n_storage; i++)
		if (stat(p->storage[i].path, &st) || !S_ISDIR(st.st_mode))
			warn(f,
			     "%s: storage path %s is not a directory on "
			     "this host",
			     scope, p->storage[i].path);
}

static int known_part(const struct found *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->n_parts; i++)
		if (strcmp(f->parts[i], name) == 0)
			return 1;
	return 0;
}

/* The site file with the plugstack line over it, per partition. */
static int check_site(struct found *f, const struct distenv_site *site)
{
	struct distenv_policy_file pf;
	struct distenv_error err;
	struct stat st;
	size_t i;

	distenv_policy_file_init(&pf);
	if (distenv_policy_load(site->config, DISTENV_POLICY_LOAD_STRICT, &pf,
				&err)) {
		distenv_policy_file_free(&pf);
		return distenv_cmd_fail(&err);
	}
	printf("site file: %s (valid, %zu partition section%s)\n", site->config,
	       pf.n_partitions, pf.n_partitions == 1 ? "" : "s");
	if (stat(site->config, &st) == 0 && !(st.st_mode & S_IROTH))
		warn(f,
		     "%s: mode %04o: only root can read it, and every "
		     "--distenv job of another user fails on it. chmod 644",
		     site->config, (unsigned) (st.st_mode & 07777));
	check_parents(f, site->config);
	for (i = 0; i < pf.n_partitions; i++) {
		const struct distenv_policy *p = &pf.partitions[i].policy;
		char scope[DISTENV_PARTITION_MAX + 16];

		snprintf(scope, sizeof(scope), "partition %s",
			 pf.partitions[i].name);
		if (f->n_parts && !f->parts_lost &&
		    !known_part(f, pf.partitions[i].name))
			warn(f,
			     "%s:%u: section for partition %s, which %s "
			     "does not define: it applies to no job",
			     site->config, pf.partitions[i].line,
			     pf.partitions[i].name, f->slurm_conf);
		if ((site->given & DISTENV_SITE_GIVEN_MODE) &&
		    (p->set & DISTENV_POLICY_DEFAULT_MODE))
			warn(f,
			     "%s: default= on the plugstack line (%s) "
			     "overrides this partition's default_mode: %s",
			     scope, f->where,
			     distenv_mode_name(p->default_mode));
		if ((site->given & DISTENV_SITE_GIVEN_PORTS) &&
		    (p->set & DISTENV_POLICY_PORT_RANGE))
			warn(f,
			     "%s: port_range= on the plugstack line (%s) "
			     "overrides this partition's port_range",
			     scope, f->where);
		check_paths(f, p, scope);
	}
	if ((site->given & DISTENV_SITE_GIVEN_MODE) &&
	    (pf.global.set & DISTENV_POLICY_DEFAULT_MODE))
		warn(f,
		     "top level: default= on the plugstack line (%s) "
		     "overrides the file's default_mode",
		     f->where);
	if ((site->given & DISTENV_SITE_GIVEN_PORTS) &&
	    (pf.global.set & DISTENV_POLICY_PORT_RANGE))
		warn(f,
		     "top level: port_range= on the plugstack line (%s) "
		     "overrides the file's port_range",
		     f->where);
	check_paths(f, &pf.global, "top level");
	for (i = 0; i < f->n_parts; i++) {
		struct distenv_policy eff;
		struct distenv_site s = *site;

		distenv_policy_effective(&pf, f->parts[i], &eff);
		distenv_policy_apply(&eff, f->parts[i], &s);
		printf("[partition %s] mode without --distenv: %s%s; "
		       "port_range %u-%u; interfaces %s%s%s\n",
		       f->parts[i], distenv_mode_name(s.default_mode),
		       (site->given & DISTENV_SITE_GIVEN_MODE) ?
			       " (plugstack default=)" :
			       "",
		       s.port_lo, s.port_hi, s.ifaces[0] ? s.ifaces : "(any)",
		       s.disabled ? "; distenv switched off" : "",
		       s.lf_disabled ? "; LLaMA-Factory features off" : "");
	}
	distenv_policy_file_free(&pf);
	return 0;
}

/* The order of distenv and a container plugin in the plugstack. */
static void check_order(struct found *f)
{
	if (!f->container[0])
		return;
	if (f->container_before) {
		warn(f,
		     "%s is loaded before distenv (%s): Slurm calls the "
		     "plugins' task_init in plugstack order, so distenv's "
		     "runs inside the container, in its mount namespace and "
		     "with the image's environment. Load distenv first: put "
		     "its line before that one (in a plugstack.conf.d "
		     "directory, a file name that sorts first, e.g. "
		     "00-distenv.conf)",
		     f->container, f->where);
		return;
	}
	printf("container plugin: %s, after distenv: the image's "
	       "environment replaces distenv's values of the names it sets; "
	       "jobs can run `distenv check-env` first in the container\n",
	       f->container);
	/* enroot 4.1.2, conf/mounts/10-system.fstab: a tmpfs at /tmp */
	printf("container plugin: enroot gives the container a fresh /tmp, "
	       "so --distenv-lf-config's resolved YAML is seen inside only "
	       "under a directory it mounts at the same path: set lf_dir: in "
	       "the site file, or users give --distenv-lf-dir\n");
}

int distenv_check_slurm_conf(const char *path)
{
	static struct found f; /* large; one per process */
	struct distenv_site site;
	struct distenv_error err;
	char *argv[LINE_MAX_ARGS];
	const char *env = getenv("SLURM_CONF");
	int argc, rc = 0;

	memset(&f, 0, sizeof(f));
	snprintf(f.slurm_conf, sizeof(f.slurm_conf), "%s",
		 path          ? path :
		 env && env[0] ? env :
				 "/etc/slurm/slurm.conf");
	{
		struct stat st;

		if (stat(f.slurm_conf, &st)) {
			distenv_error_set(
				&err, f.slurm_conf,
				"give its path "
				"with --slurm-conf PATH or SLURM_CONF",
				"cannot find slurm.conf");
			return distenv_cmd_fail(&err);
		}
	}
	slurm_conf_file(&f, f.slurm_conf, 0);
	if (!f.plugstack[0]) {
		const char *slash = strrchr(f.slurm_conf, '/');

		snprintf(f.plugstack, sizeof(f.plugstack),
			 "%.*s/plugstack.conf",
			 slash ? (int) (slash - f.slurm_conf) : 1,
			 slash ? f.slurm_conf : ".");
	}
	printf("slurm.conf: %s (%zu partition%s)\n", f.slurm_conf, f.n_parts,
	       f.n_parts == 1 ? "" : "s");
	printf("plugstack: %s\n", f.plugstack);
	plugstack_file(&f, f.plugstack, 0);
	if (!f.have_line) {
		printf("distenv is not loaded by this configuration (no "
		       "\"required distenv.so\" line)\n");
		return 0;
	}
	printf("distenv's line: %s: %s\n", f.where, f.line);
	check_order(&f);
	argc = line_args(f.line, argv);
	distenv_error_clear(&err);
	if (distenv_parse_plugstack(argc, argv, &site, &err)) {
		distenv_error_prefix_where(&err, f.where);
		return distenv_cmd_fail(&err);
	}
	if (site.config[0])
		rc = check_site(&f, &site);
	else
		printf("no site file (no config= on the line): every partition "
		       "gets the line's settings, mode %s\n",
		       distenv_mode_name(site.default_mode));
	printf("%d warning%s\n", f.warnings, f.warnings == 1 ? "" : "s");
	free(f.parts);
	return rc;
}
