/*
 * spank_options.c: the --distenv* options, registered from the rows of
 * distenv_option_table.h that have a plugin name, with one idempotent
 * callback (Slurm may call it twice with the same value).
 *
 * On the submit side (srun, sbatch, salloc, remote == 0) a bad value
 * fails the command at once. In slurmstepd (remote == 1) a callback must
 * not fail, so the error is kept and reported from task_init.
 */
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "lf_ckpt.h"
#include "lf_request.h"
#include "spank_state.h"

static int reject(int remote)
{
	if (remote)
		return 0;
	distenv_log_error(&distenv_state.option_error);
	return -1;
}

/* Slurm 22.05 forwards an optional-argument option given without a
 * value (#SBATCH --distenv, salloc --distenv) to the inner srun as
 * SLURM_SPANK__SLURM_SPANK_OPTION_distenv_distenv=(null), the NULL
 * value printed with "%s" (seen on Debian's 22.05.8, tests/cluster). */
static const char *no_value_as_null(const char *optarg)
{
	return optarg && strcmp(optarg, "(null)") == 0 ? NULL : optarg;
}

/* --distenv-lf-config (plugin/lf/): kept in req.lf_config, since
 * optarg does not outlive the callback. The file is checked on the
 * submit side only, where the callback runs as the user; slurmstepd
 * (root) only records the path: the task reads it. */
static int keep_lf_config(const char *optarg, const char *where, int remote)
{
	struct distenv_request *req = &distenv_state.req;

	if (!optarg || !optarg[0] || strlen(optarg) >= sizeof(req->lf_config))
		return distenv_error_set(&distenv_state.option_error, where,
					 "name the training YAML",
					 "missing or too long a path");
	if (!remote &&
	    distenv_lf_config_check(optarg, &distenv_state.option_error)) {
		distenv_error_prefix_where(&distenv_state.option_error, where);
		return -1;
	}
	snprintf(req->lf_config, sizeof(req->lf_config), "%s", optarg);
	return 0;
}

/* The options of the LLaMA-Factory run preparation into the plugin's
 * request (spank_state.h), by plugin/lf's parser as distenv plan and
 * prepare set theirs (lf_request.h); the plugin's own part is what
 * must outlive optarg. */
static int set_lf(enum distenv_opt_id id, const char *optarg, const char *where,
		  int remote)
{
	struct distenv_plugin_state *st = &distenv_state;
	struct distenv_error *err = &st->option_error;
	int rc;

	switch (id) {
	case DISTENV_OPT_LF_CONFIG:
		if (keep_lf_config(optarg, where, remote))
			return -1;
		optarg = st->req.lf_config;
		break;
	case DISTENV_OPT_LF_DIR:
		/* checked below, then kept: optarg does not outlive us */
		rc = lf_request_set(&st->lf, id, optarg, where, err);
		if (rc)
			return rc;
		snprintf(st->req.lf_dir, sizeof(st->req.lf_dir), "%s", optarg);
		st->lf.dir = st->req.lf_dir;
		return 0;
	case DISTENV_OPT_RESUME:
		st->lf.resume_path = st->lf_resume_path;
		return lf_parse_resume(optarg, where, &st->lf.resume,
				       st->lf_resume_path,
				       sizeof(st->lf_resume_path), err);
	default:
		break;
	}
	rc = lf_request_set(&st->lf, id, optarg, where, err);
	if (rc == LF_REQUEST_NOT_OWNED)
		return distenv_error_set(err, where, NULL,
					 "not an option of the plugin");
	/* the core's derivation reads the check level too */
	st->req.check = st->lf.check;
	return rc;
}

/* The one callback of every option; val is the option's row
 * (distenv_option_table.h). */
static int opt_value(int val, const char *optarg, int remote)
{
	const struct distenv_option_row *row;
	char where[SPANK_OPTION_MAXLEN + 3];
	int rc;

	if (val < 0 || val >= DISTENV_OPT_COUNT)
		return -1;
	row = &distenv_option_table[val];
	snprintf(where, sizeof(where), "--%s", row->plugin_name);
	if (row->has_arg == 2)
		optarg = no_value_as_null(optarg);
	if (row->parser == DISTENV_PARSE_LF)
		rc = set_lf(val, optarg, where, remote);
	else
		rc = distenv_request_set(&distenv_state.req, val, optarg, where,
					 &distenv_state.option_error);
	return rc ? reject(remote) : 0;
}

/* The plugin's rows of the table, as Slurm takes them; Slurm keeps
 * what it is given, so the array lives as long as the plugin. */
static struct spank_option spank_opts[DISTENV_OPT_COUNT];

int distenv_options_register(spank_t sp)
{
	size_t i;

	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *row = &distenv_option_table[i];
		struct spank_option *o = &spank_opts[i];
		spank_err_t rc;

		if (!row->plugin_name)
			continue;
		/* spank.h declares the strings char *; Slurm only reads
		 * them. */
		o->name = (char *) row->plugin_name;
		o->arginfo = (char *) row->arg;
		o->usage = (char *) row->usage;
		o->has_arg = row->has_arg;
		o->val = (int) i;
		o->cb = opt_value;
		rc = spank_option_register(sp, o);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("distenv: cannot register --%s: %s",
				    o->name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

void distenv_log_error(const struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];

	distenv_error_format(err, line, sizeof(line));
	slurm_error("distenv: %s", line);
}
