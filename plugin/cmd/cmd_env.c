/*
 * cmd_env.c: `distenv env` and `distenv show`: derive from the Slurm
 * variables of the task the command runs in, so that
 * `eval "$(distenv env)"` inside srun works where the plugin is not
 * installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "distenv_format.h"
#include "distenv_sys.h"
#include "distenv_topo.h"
#include "distenv_topo_hwloc.h"

extern char **environ;

/* The options after the subcommand into req. Returns -1 to go on, else
 * the exit status (0 after --help, 2 a usage error, printed). */
static int parse_request(const struct distenv_command *cmd, int argc,
			 char **argv, struct distenv_request *req)
{
	struct distenv_cmd_options o;
	struct distenv_error err;
	const char *value;
	int id;

	memset(req, 0, sizeof(*req));
	req->mode = DISTENV_MODE_TORCHRUN;
	distenv_error_clear(&err);
	distenv_cmd_options_begin(&o, cmd);
	while ((id = distenv_cmd_option(&o, argc, argv, &value, &err)) >= 0)
		if (distenv_request_set(req, id, value, o.where, &err))
			return distenv_cmd_usage_error(&err);
	return distenv_cmd_options_end(&o, id, argc, argv, 0, 0, &err);
}

/* The node's topology as the plugin loads it (natively, or the file in
 * HWLOC_XMLFILE, which hwloc reads itself), or NULL with the reason in
 * note: a topology problem never stops the command. */
static struct distenv_topo *load_topology(char *note, size_t len)
{
	struct distenv_topo *topo = malloc(sizeof(*topo));
	struct distenv_error err;
	char line[3 * DISTENV_ERROR_TEXT];

	if (!topo) {
		snprintf(note, len, "none (out of memory)");
		return NULL;
	}
	if (distenv_topo_load(NULL, DISTENV_NVIDIA_GPUS_DIR, topo, &err)) {
		free(topo);
		distenv_error_format(&err, line, sizeof(line));
		snprintf(note, len, "none, so no NCCL_IB_HCA (%s)", line);
		return NULL;
	}
	distenv_topo_summary(topo, note, len);
	return topo;
}

static int run(const struct distenv_command *cmd, int argc, char **argv,
	       int show)
{
	struct distenv_request req;
	struct distenv_site site;
	struct distenv_step step;
	struct distenv_vars vars = { 0 };
	struct distenv_error err;

	struct distenv_topo *topo;
	char note[1024];
	int rc;

	rc = parse_request(cmd, argc, argv, &req);
	if (rc >= 0)
		return rc;
	distenv_error_clear(&err);
	distenv_site_defaults(&site);
	topo = load_topology(note, sizeof(note));
	rc = distenv_derive_for_task_topo(&site, &req,
					  (const char *const *) environ, -1,
					  topo, note, NULL, 0, &step, &vars,
					  &err);
	if (rc == 0) {
		if (show)
			distenv_format_show(stdout, &step, req.mode, &vars);
		else
			distenv_format_exports(stdout, &vars);
		if (!show) /* show has them in its block */
			distenv_format_warnings(stderr, &vars);
		distenv_vars_free(&vars);
	}
	free(topo);
	return rc ? distenv_cmd_fail(&err) : 0;
}

int distenv_cmd_env(const struct distenv_command *cmd, int argc, char **argv)
{
	return run(cmd, argc, argv, 0);
}

int distenv_cmd_show(const struct distenv_command *cmd, int argc, char **argv)
{
	return run(cmd, argc, argv, 1);
}
