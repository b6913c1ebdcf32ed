/*
 * distenv_main.c: the distenv command, a second thin shell around the
 * core. It derives from the Slurm variables of the task it runs in, so
 * `eval "$(distenv env)"` inside srun works where the plugin is not
 * installed.
 *
 *   distenv env  [--mode torchrun|tasks] [--port P] [--ifname SPEC] [--nproc N]
 *   distenv show [same options]
 *   distenv --version | --help
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "distenv_format.h"
#include "distenv_ifspec.h"
#include "distenv_sys.h"

extern char **environ;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: distenv env  [--mode torchrun|tasks] [--port PORT] "
		"[--ifname SPEC] [--nproc N]\n"
		"       distenv show [same options]\n"
		"       distenv --version\n"
		"\n"
		"Run inside a Slurm step (srun). 'env' prints shell export "
		"lines for\n"
		"eval \"$(distenv env)\"; 'show' prints each variable with "
		"where it came from.\n");
}

static int fail(const struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];

	distenv_error_format(err, line, sizeof(line));
	fprintf(stderr, "distenv: error: %s\n", line);
	return 1;
}

/* Parse the options after the subcommand into req. */
static int parse_request(int argc, char **argv, struct distenv_request *req,
			 struct distenv_error *err)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, 'm'},
		{"port", required_argument, NULL, 'p'},
		{"ifname", required_argument, NULL, 'i'},
		{"nproc", required_argument, NULL, 'n'},
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

static int derive(const struct distenv_request *req, struct distenv_step *step,
		  struct distenv_vars *vars, struct distenv_error *err)
{
	struct distenv_site site;

	distenv_site_defaults(&site);
	return distenv_derive_for_task(&site, req, (const char *const *)environ,
				       -1, step, vars, err);
}

int main(int argc, char **argv)
{
	struct distenv_request req;
	struct distenv_step step;
	struct distenv_vars vars = {0};
	struct distenv_error err;
	const char *cmd = argc > 1 ? argv[1] : NULL;

	distenv_error_clear(&err);
	if (!cmd || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("distenv %s (built against Slurm %s)\n", PACKAGE_VERSION,
		       DISTENV_SLURM_VERSION);
		return 0;
	}
	if (strcmp(cmd, "env") != 0 && strcmp(cmd, "show") != 0) {
		fprintf(stderr, "distenv: error: unknown command '%s'. See "
				"distenv --help\n", cmd);
		return 2;
	}
	if (parse_request(argc - 1, argv + 1, &req, &err))
		return fail(&err);
	if (derive(&req, &step, &vars, &err))
		return fail(&err);
	if (strcmp(cmd, "env") == 0)
		distenv_format_exports(stdout, &vars);
	else
		distenv_format_show(stdout, &step, req.mode, &vars);
	distenv_vars_free(&vars);
	return 0;
}
