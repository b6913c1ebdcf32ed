/*
 * distenv_options.h: the values a user or admin gives distenv, and their
 * parsers. One parser per input; each names the option in its error.
 *
 * Precedence (documented in distenv(8)): a user option (command line or
 * #SBATCH line) over the plugstack argument default=.
 */
#ifndef DISTENV_OPTIONS_H
#define DISTENV_OPTIONS_H

#include <stdint.h>

#include "distenv_error.h"

enum distenv_mode {
	DISTENV_MODE_UNSET = 0, /* no --distenv: the plugstack default holds */
	DISTENV_MODE_OFF,
	DISTENV_MODE_TORCHRUN, /* one task per node, each runs torchrun */
	DISTENV_MODE_TASKS,    /* one task per rank, no torchrun */
};

#define DISTENV_IFSPEC_TEXT_MAX 256

/* What the user asked for, from the --distenv* options. */
struct distenv_request {
	enum distenv_mode mode;
	uint16_t port;                        /* --distenv-port, 0 = none */
	char ifname[DISTENV_IFSPEC_TEXT_MAX]; /* --distenv-ifname, "" = none */
	uint32_t nproc;                       /* --distenv-nproc, 0 = none */
	int show;                             /* --distenv-show given */
};

/* What the admin set on the plugstack line. */
struct distenv_site {
	enum distenv_mode default_mode; /* default=, DISTENV_MODE_OFF if absent */
	uint16_t port_lo, port_hi;      /* port_range=, inclusive */
};

/* Default port_range: below Linux's default ephemeral range 32768-60999
 * (Documentation/networking/ip-sysctl.rst, ip_local_port_range) and above
 * the ports torchrun and DeepSpeed use as fixed defaults (29500). */
#define DISTENV_PORT_LO_DEFAULT 29600
#define DISTENV_PORT_HI_DEFAULT 32767

/* Fill site with the defaults: mode off, the default port range. */
void distenv_site_defaults(struct distenv_site *site);

/* "off", "torchrun", "tasks" or "unset". */
const char *distenv_mode_name(enum distenv_mode mode);

/*
 * --distenv[=torchrun|tasks|off]: NULL or "" means torchrun. where names
 * the option ("--distenv") for the error.
 */
int distenv_parse_mode(const char *value, const char *where,
		       enum distenv_mode *out, struct distenv_error *err);

/* A TCP port 1024-65535 (ports below 1024 need root to bind). */
int distenv_parse_port(const char *value, const char *where, uint16_t *out,
		       struct distenv_error *err);

/* Processes per node: 1-1024. */
int distenv_parse_nproc(const char *value, const char *where, uint32_t *out,
			struct distenv_error *err);

/* "LO-HI" with 1024 <= LO <= HI <= 65535. */
int distenv_parse_port_range(const char *value, const char *where,
			     uint16_t *lo, uint16_t *hi,
			     struct distenv_error *err);

/*
 * The plugstack arguments (argc/argv as slurm_spank_init gets them):
 * default=off|torchrun|tasks and port_range=LO-HI. Unknown keys and bad
 * values are errors naming the argument; site is filled with defaults
 * first, so it is usable even after an error.
 */
int distenv_parse_plugstack(int argc, char **argv, struct distenv_site *site,
			    struct distenv_error *err);

/* The mode in force: the request's, else the site default. */
enum distenv_mode distenv_effective_mode(const struct distenv_site *site,
					 const struct distenv_request *req);

#endif
