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
#include "distenv_ifspec.h"
#include "distenv_sys.h"
#include "distenv_topo.h"
#include "distenv_topo_hwloc.h"

extern char **environ;

/* Parse the options after the subcommand into req. */
static int parse_request(int argc, char **argv, struct distenv_request *req,
			 struct distenv_error *err)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, 'm'},
		{"port", required_argument, NULL, 'p'},
		{"ifname", required_argument, NULL, 'i'},
		{"nproc", required_argument, NULL, 'n'},
		{"nodes", required_argument, NULL, 'N'},
		{"max-restarts", required_argument, NULL, 'r'},
		{NULL, 0, NULL, 0}};
	int c;

	memset(req, 0, sizeof(*req));
	req->mode = DISTENV_MODE_TORCHRUN;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		int rc = 0;

		switch (c) {
		case 'm':
			rc = distenv_parse_mode(optarg, "--mode", &req->mode, err);
			break;
		case 'p':
			rc = distenv_parse_port(optarg, "--port", &req->port, err);
			break;
		case 'i':
			rc = distenv_ifspec_validate(optarg, "--ifname", err);
			snprintf(req->ifname, sizeof(req->ifname), "%s", optarg);
			break;
		case 'n':
			rc = distenv_parse_nproc(optarg, "--nproc", &req->nproc,
						 err);
			break;
		case 'N':
			rc = distenv_parse_nodes_range(optarg, "--nodes",
						       &req->min_nodes,
						       &req->max_nodes, err);
			break;
		case 'r':
			rc = distenv_parse_max_restarts(optarg, "--max-restarts",
							&req->max_restarts, err);
			req->max_restarts_given = 1;
			break;
		default:
			return distenv_error_set(err, argv[optind - 1],
						 "see distenv --help",
						 "unknown option or missing value");
		}
		if (rc)
			return -1;
	}
	if (optind < argc)
		return distenv_error_set(err, argv[optind], "see distenv --help",
					 "unexpected argument");
	return 0;
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

static int run(int argc, char **argv, int show)
{
	struct distenv_request req;
	struct distenv_site site;
	struct distenv_step step;
	struct distenv_vars vars = {0};
	struct distenv_error err;

	struct distenv_topo *topo;
	char note[1024];
	int rc;

	distenv_error_clear(&err);
	distenv_site_defaults(&site);
	if (parse_request(argc, argv, &req, &err)) {
		distenv_cmd_fail(&err);
		return 2; /* a usage error, as in every subcommand */
	}
	topo = load_topology(note, sizeof(note));
	rc = distenv_derive_for_task_topo(&site, &req,
					  (const char *const *)environ, -1,
					  topo, note, NULL, NULL, &step, &vars,
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

int distenv_cmd_env(int argc, char **argv)
{
	return run(argc, argv, 0);
}

int distenv_cmd_show(int argc, char **argv)
{
	return run(argc, argv, 1);
}
