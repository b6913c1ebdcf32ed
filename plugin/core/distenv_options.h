/*
 * distenv_options.h: the values a user or admin gives distenv, and their
 * parsers. One parser per input; each names the option in its error.
 *
 * Precedence (documented in distenv(8)): a user option (command line or
 * #SBATCH line) over the plugstack argument default=.
 */
#ifndef DISTENV_OPTIONS_H
#define DISTENV_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "distenv_ifspec.h"
#include "distenv_option_table.h"
#include "distenv_vars.h"

enum distenv_mode {
	DISTENV_MODE_UNSET = 0, /* no --distenv: the plugstack default holds */
	DISTENV_MODE_OFF,
	DISTENV_MODE_TORCHRUN, /* one task per node, each runs torchrun */
	DISTENV_MODE_TASKS, /* one task per rank, no torchrun */
	DISTENV_MODE_ELASTIC, /* torchrun with c10d rendezvous (RDZV_ID) */
};

#define DISTENV_LF_PATH_MAX 1024 /* --distenv-lf-config, NUL included */

/* --distenv-check: findings warn (the default), fail the step
 * (strict), or are off; the LLaMA-Factory checks (plugin/lf) and the
 * warnings of the derivation (network, CUDA_VISIBLE_DEVICES) read it. */
enum distenv_check {
	DISTENV_CHECK_WARN = 0,
	DISTENV_CHECK_STRICT,
	DISTENV_CHECK_OFF,
};

/* What the user asked for, from the --distenv* options. */
struct distenv_request {
	enum distenv_mode mode;
	uint16_t port; /* --distenv-port, 0 = none */
	char ifname[DISTENV_IFSPEC_TEXT_MAX]; /* --distenv-ifname, "" = none */
	uint32_t nproc; /* --distenv-nproc, 0 = none */
	int show; /* --distenv-show given */
	uint32_t min_nodes, max_nodes; /* --distenv-nodes, 0 = none */
	uint32_t max_restarts; /* --distenv-max-restarts */
	int max_restarts_given;
	/* Of the LLaMA-Factory run preparation, the two the core reads:
	 * the YAML named (the site's lf_features: rule) and the check
	 * level (the derivation's network warnings). The plugin keeps its
	 * settings as plugin/lf's request (plugin/spank/spank_state.h),
	 * whose config points at lf_config and whose check it copies to
	 * check. */
	char lf_config
		[DISTENV_LF_PATH_MAX]; /* --distenv-lf-config, "" = none */
	int check; /* enum distenv_check, 0 = warn */
	/* --distenv-lf-dir, "" = none: kept here as lf_config is, and read
	 * by the site's locked: rule */
	char lf_dir[DISTENV_LF_PATH_MAX];
	int mark_storage; /* --distenv-mark-storage */
};

/* Preferred address family for MASTER_ADDR (site policy
 * address_family:): ANY keeps the resolver's order (getaddrinfo(3), RFC
 * 6724); IPV4 / IPV6 try that family's addresses first. */
enum distenv_family {
	DISTENV_FAMILY_ANY = 0,
	DISTENV_FAMILY_IPV4,
	DISTENV_FAMILY_IPV6,
};

/* NCCL_IB_HCA policy (site policy hca:): AUTO derives it from the
 * topology, FIXED exports the site's list as given (NCCL_IB_HCA syntax,
 * NCCL env docs), OFF leaves NCCL_IB_HCA to NCCL. */
enum distenv_hca_mode {
	DISTENV_HCA_AUTO = 0,
	DISTENV_HCA_FIXED,
	DISTENV_HCA_OFF,
};

#define DISTENV_SITE_VARS_MAX 32 /* extra variables per partition */
#define DISTENV_SITE_VALUE_MAX 256 /* bytes of one, NUL included */
#define DISTENV_SITE_PATH_MAX 256 /* config=, topology_xml: */
#define DISTENV_SITE_NAME_MAX 256 /* master_name: rule, NUL included */
#define DISTENV_PARTITION_MAX 64 /* Slurm partition name, NUL included */

/* An extra variable the site sets (site policy env:). */
struct distenv_site_var {
	char name[DISTENV_NAME_MAX];
	char value[DISTENV_SITE_VALUE_MAX];
};

/* distenv_site.given: plugstack arguments that were on the line; they
 * win over the site policy file (docs/admin-guide.md). */
#define DISTENV_SITE_GIVEN_MODE 0x1u
#define DISTENV_SITE_GIVEN_PORTS 0x2u

/* What the admin set: the plugstack line, then the site policy file
 * (plugin/site/distenv_policy.h) for the task's partition. All zero /
 * empty past port_hi means "no policy": no filter, resolver order, the
 * host name itself, HCA auto, no extra variables. */
struct distenv_site {
	enum distenv_mode
		default_mode; /* default=, DISTENV_MODE_OFF if absent */
	uint16_t port_lo, port_hi; /* port_range=, inclusive */
	unsigned given; /* DISTENV_SITE_GIVEN_* */
	char config[DISTENV_SITE_PATH_MAX]; /* config=, "" = no policy file */
	/* From the policy file, for one partition. */
	char partition[DISTENV_PARTITION_MAX]; /* SLURM_JOB_PARTITION, or "" */
	char ifaces
		[DISTENV_IFSPEC_TEXT_MAX]; /* interfaces:, NCCL syntax; "" = all */
	enum distenv_family family; /* address_family: */
	char master_name[DISTENV_SITE_NAME_MAX]; /* master_name:, "" = {host} */
	enum distenv_hca_mode hca_mode; /* hca: */
	char hca[DISTENV_IFSPEC_TEXT_MAX]; /* hca: list when FIXED */
	char topology_xml
		[DISTENV_SITE_PATH_MAX]; /* topology_xml:, "" = native */
	char lf_dir[DISTENV_SITE_PATH_MAX]; /* lf_dir:, "" = none */
	size_t n_vars; /* env: */
	struct distenv_site_var vars[DISTENV_SITE_VARS_MAX];
	/* Site controls (policy file): */
	int disabled; /* enabled: false: distenv refused here */
	int lf_disabled; /* lf_features: false: --distenv-lf-config refused */
	unsigned locked; /* locked: DISTENV_SITE_LOCK_* */
};

/* locked: in the site file: what users' options may not change. */
#define DISTENV_SITE_LOCK_PORTS 0x1u /* port_range: --distenv-port */
#define DISTENV_SITE_LOCK_IFACES 0x2u /* interfaces: --distenv-ifname */
#define DISTENV_SITE_LOCK_LF_DIR 0x4u /* lf_dir: --distenv-lf-dir */

/*
 * The site's controls against the request (the user's options): a step
 * on a partition with enabled: false, --distenv-lf-config where
 * lf_features: false, --distenv-port, --distenv-ifname or
 * --distenv-lf-dir where locked: names port_range, interfaces or lf_dir. Pure. Errors name the option, the
 * rule and its partition, and the fix (leave the option out, or ask the
 * admins).
 */
int distenv_site_check_request(const struct distenv_site *site,
			       const struct distenv_request *req,
			       struct distenv_error *err);

/* Default port_range: below Linux's default ephemeral range 32768-60999
 * (Documentation/networking/ip-sysctl.rst, ip_local_port_range) and above
 * the ports torchrun and DeepSpeed use as fixed defaults (29500). */
#define DISTENV_PORT_LO_DEFAULT 29600
#define DISTENV_PORT_HI_DEFAULT 32767

/* Fill site with the defaults: mode off, the default port range, no
 * config file, no policy. */
void distenv_site_defaults(struct distenv_site *site);

/* "off", "torchrun", "tasks" or "unset". */
const char *distenv_mode_name(enum distenv_mode mode);

/*
 * --distenv[=torchrun|tasks|off]: NULL or "" means torchrun. where names
 * the option ("--distenv") for the error.
 */
int distenv_parse_mode(const char *value, const char *where,
		       enum distenv_mode *out, struct distenv_error *err);

/*
 * The value of an option whose row (distenv_option_table.h) has
 * DISTENV_PARSE_REQUEST into req, for the plugin and for distenv env
 * alike: the mode, --distenv-nodes, -max-restarts, -port, -ifname,
 * -nproc, and the flags -show and -mark-storage. where names the option
 * as the user gave it ("--distenv-port", "--port") for the error. A row
 * of another parser is refused (a caller's mistake). Returns 0 or -1.
 */
int distenv_request_set(struct distenv_request *req, enum distenv_opt_id id,
			const char *value, const char *where,
			struct distenv_error *err);

/*
 * --distenv-nodes=MIN:MAX (or N for N:N): the node counts an elastic
 * (c10d) launch accepts, torchrun's --nnodes MIN:MAX, 1 <= MIN <= MAX <=
 * 100000. Errors: malformed, zero, MIN > MAX.
 */
int distenv_parse_nodes_range(const char *value, const char *where,
			      uint32_t *min, uint32_t *max,
			      struct distenv_error *err);

/* --distenv-max-restarts=N: torchrun's --max-restarts, 0-1000. */
int distenv_parse_max_restarts(const char *value, const char *where,
			       uint32_t *out, struct distenv_error *err);

/* A TCP port 1024-65535 (ports below 1024 need root to bind). */
int distenv_parse_port(const char *value, const char *where, uint16_t *out,
		       struct distenv_error *err);

/* Processes per node: 1-1024. */
int distenv_parse_nproc(const char *value, const char *where, uint32_t *out,
			struct distenv_error *err);

/* "LO-HI" with 1024 <= LO <= HI <= 65535. */
int distenv_parse_port_range(const char *value, const char *where, uint16_t *lo,
			     uint16_t *hi, struct distenv_error *err);

/*
 * The plugstack arguments (argc/argv as slurm_spank_init gets them):
 * default=off|torchrun|tasks, port_range=LO-HI and config=PATH (the site
 * policy file, an absolute path; read by plugin/site/). Unknown keys and
 * bad values are errors naming the argument; site is filled with
 * defaults first, so it is usable even after an error. site->given
 * records default= and port_range=.
 */
int distenv_parse_plugstack(int argc, char **argv, struct distenv_site *site,
			    struct distenv_error *err);

/* The mode in force: the request's, else the site default. */
enum distenv_mode distenv_effective_mode(const struct distenv_site *site,
					 const struct distenv_request *req);

/* Longest option or plugstack value distenv accepts, in bytes. */
#define DISTENV_OPTION_TEXT_MAX 255

/*
 * Check the text of an option or plugstack value before its parser reads
 * it, so that whatever reaches an environment, a log line or a shell is
 * plain: at most DISTENV_OPTION_TEXT_MAX bytes; only printable ASCII (no
 * control byte, no byte >= 0x80: names, numbers and modes are ASCII, and
 * a line break would split a log line or an `export` line); no '#'
 * (starts a comment in plugstack.conf, docs/contracts.md 5, and in shells);
 * no blank or shell metacharacter (| & ; < > ( ) $ ` \ " ' * ? [ ] { }
 * ~ !: POSIX XCU 2.2 quoting and 2.13 pattern matching), which no value
 * of any distenv option holds. NULL passes (the parsers handle "no
 * value"). The error names where, the offending byte and its offset,
 * and never echoes a non-printable byte. Returns 0 or -1.
 */
int distenv_option_text_check(const char *value, const char *where,
			      struct distenv_error *err);

/*
 * --distenv-lf-dir=DIR and the site file's lf_dir: (plugin/lf/lf_dir.h):
 * an absolute path that distenv_option_text_check accepts (no blank:
 * LLaMA-Factory 0.9.3-0.9.5's launcher.py splits torchrun's command line
 * on whitespace, so a path with one would reach the trainers as two
 * arguments). Returns 0 or -1 with err naming where.
 */
int distenv_parse_lf_dir(const char *value, const char *where,
			 struct distenv_error *err);

#endif
