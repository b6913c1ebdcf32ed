/*
 * cmd_env.c: `distenv env` and `distenv show`: derive from the Slurm
 * variables of the task the command runs in, so that
 * `eval "$(distenv env)"` inside srun works where the plugin is not
 * installed.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "distenv_format.h"
#include "distenv_launch_line.h"
#include "distenv_sys.h"
#include "distenv_topo.h"
#include "distenv_topo_hwloc.h"

extern char **environ;

/* The options after the subcommand into req, and the index of the first
 * operand (`distenv env -- CMD...`: CMD) into *first; operands only
 * where max_operands allows. Returns -1 to go on, else the exit status
 * (0 after --help, 2 a usage error, printed). */
static int parse_request(const struct distenv_command *cmd, int argc,
			 char **argv, struct distenv_request *req,
			 int max_operands, int *first)
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
	*first = optind;
	return distenv_cmd_options_end(&o, id, argc, argv, 0, max_operands,
				       &err);
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
	int rc, first = argc;

	rc = parse_request(cmd, argc, argv, &req, show ? 0 : argc, &first);
	if (rc >= 0)
		return rc;
	distenv_error_clear(&err);
	distenv_site_defaults(&site);
	topo = load_topology(note, sizeof(note));
	rc = distenv_derive_for_task_topo(&site, &req,
					  (const char *const *) environ, -1,
					  topo, note, NULL, 0, &step, &vars,
					  &err);
	/* distenv env -- CMD...: CMD's launch line, as the plugin checks the
	 * step's command (distenv_launch_line.h) */
	if (rc == 0 && first < argc)
		rc = distenv_launch_check_task(req.check, &step, &vars,
					       argc - first, argv + first,
					       &err);
	if (rc == 0) {
		if (show)
			distenv_format_show(stdout, &step, req.mode, &vars);
		else
			distenv_format_exports(stdout, &vars);
		if (!show) /* show has them in its block */
			distenv_format_warnings(stderr, &vars);
	}
	distenv_vars_free(&vars);
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
