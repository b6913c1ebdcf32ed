/*
 * distenv_policy.h: the site policy file (config= on the plugstack line,
 * e.g. /etc/slurm/distenv.yaml): what an admin decides once for the whole
 * site instead of in every user's script. contrib/distenv.yaml documents
 * every key with an example.
 *
 *   version: 1                  optional; only 1 is known
 *   default_mode: off|torchrun|tasks
 *   port_range: LO-HI           1024 <= LO <= HI <= 65535
 *   interfaces: LIST            NCCL_SOCKET_IFNAME syntax (NCCL env docs):
 *                               eth,ib  =eth0  ^docker,lo  ^=eth1
 *   address_family: ipv4|ipv6|any
 *   master_name: RULE           e.g. {host}-ib (distenv_master.h)
 *   hca: auto|off|LIST          LIST in NCCL_IB_HCA syntax, or a YAML
 *                               sequence of HCA names (exact: =a,b)
 *   topology_xml: /PATH         hwloc XML of the node type
 *   env: {NAME: VALUE, ...}     extra variables for the tasks
 *   storage: [{path: /PATH, type: shared|local}, ...]
 *   lf_dir: /PATH               where --distenv-lf-config's resolved
 *                               copies go (plugin/lf/lf_dir.h)
 *   enabled: true|false         false: distenv refused, even with
 *                               --distenv (a site default stays off)
 *   lf_features: true|false     false: --distenv-lf-config refused
 *   locked: [port_range, interfaces, lf_dir]  the user's
 *                               --distenv-port / --distenv-ifname /
 *                               --distenv-lf-dir refused
 *   partitions: {PARTITION: {any key above but version and partitions}}
 *
 * A partition's keys replace the top-level ones, except env:, which is
 * merged by name (the partition's value wins). Strict: an unknown key, a
 * wrong type, an invalid value, a duplicate key, an anchor, alias or tag,
 * or a second document is an error whose where is "FILE:LINE:COL" and
 * whose fix lists the accepted values.
 *
 * Layers: this header's pure functions (distenv_policy.c) and the parser
 * (distenv_policy_parse.c, with the keys' handlers of
 * distenv_policy_keys.h and libyaml's events of distenv_policy_yaml.h,
 * from a memory buffer) do no system call; distenv_policy_load()
 * (distenv_policy_load.c) is the adapter that opens the file.
 */
#ifndef DISTENV_POLICY_H
#define DISTENV_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "distenv_options.h"

/* Keys of one scope, as bits of distenv_policy.set. */
#define DISTENV_POLICY_DEFAULT_MODE 0x001u
#define DISTENV_POLICY_PORT_RANGE 0x002u
#define DISTENV_POLICY_INTERFACES 0x004u
#define DISTENV_POLICY_ADDRESS_FAMILY 0x008u
#define DISTENV_POLICY_MASTER_NAME 0x010u
#define DISTENV_POLICY_HCA 0x020u
#define DISTENV_POLICY_TOPOLOGY_XML 0x040u
#define DISTENV_POLICY_ENV 0x080u
#define DISTENV_POLICY_STORAGE 0x100u
#define DISTENV_POLICY_ENABLED 0x200u
#define DISTENV_POLICY_LF_FEATURES 0x400u
#define DISTENV_POLICY_LOCKED 0x800u
#define DISTENV_POLICY_LF_DIR 0x1000u

#define DISTENV_POLICY_MOUNTS_MAX 32
#define DISTENV_POLICY_PARTITIONS_MAX 256
#define DISTENV_POLICY_FILE_MAX (1024 * 1024) /* bytes the loader reads */

/* What a mount holds, for the checkpoint checks of a later issue
 * (docs/contracts.md 2). */
enum distenv_storage_kind {
	DISTENV_STORAGE_SHARED, /* the same files on every node (NFS, Lustre) */
	DISTENV_STORAGE_LOCAL, /* each node its own (local disk, tmpfs) */
};

struct distenv_policy_mount {
	char path[DISTENV_SITE_PATH_MAX]; /* absolute */
	enum distenv_storage_kind kind;
};

/* One scope of the file (top level, or one partition), or the effective
 * policy for a partition. Fields whose bit is not in set hold defaults. */
struct distenv_policy {
	unsigned set; /* DISTENV_POLICY_* keys given */
	enum distenv_mode default_mode;
	uint16_t port_lo, port_hi;
	char interfaces[DISTENV_IFSPEC_TEXT_MAX];
	enum distenv_family family;
	char master_name[DISTENV_SITE_NAME_MAX];
	enum distenv_hca_mode hca_mode;
	char hca[DISTENV_IFSPEC_TEXT_MAX]; /* the NCCL_IB_HCA list, FIXED */
	char topology_xml[DISTENV_SITE_PATH_MAX];
	size_t n_env;
	struct distenv_site_var env[DISTENV_SITE_VARS_MAX];
	size_t n_storage;
	struct distenv_policy_mount storage[DISTENV_POLICY_MOUNTS_MAX];
	char lf_dir[DISTENV_SITE_PATH_MAX]; /* "" = none */
	int enabled; /* enabled: (default true) */
	int lf_features; /* lf_features: (default true) */
	unsigned locked; /* locked: DISTENV_SITE_LOCK_* */
};

struct distenv_policy_partition {
	char name[DISTENV_PARTITION_MAX];
	unsigned line; /* where its section starts, 1-based */
	struct distenv_policy policy;
};

/* A parsed file. Initialise with distenv_policy_file_init, free with
 * distenv_policy_file_free (also after a failed parse). */
struct distenv_policy_file {
	char path[DISTENV_SITE_PATH_MAX]; /* as given to the parser */
	struct distenv_policy global;
	size_t n_partitions;
	struct distenv_policy_partition *partitions; /* in file order */
};

void distenv_policy_file_init(struct distenv_policy_file *file);
void distenv_policy_file_free(struct distenv_policy_file *file);

/*
 * Parse text (len bytes, need not be NUL-terminated) as a policy file
 * named name (for "NAME:LINE:COL" in errors). out is freed and refilled;
 * on error it is empty (no policy). Errors: YAML syntax, the strictness
 * rules above, more than DISTENV_SITE_VARS_MAX variables for a partition
 * (top level and partition merged), more than DISTENV_POLICY_MOUNTS_MAX
 * mounts or DISTENV_POLICY_PARTITIONS_MAX partitions, out of memory.
 */
int distenv_policy_parse(const char *text, size_t len, const char *name,
			 struct distenv_policy_file *out,
			 struct distenv_error *err);

/*
 * The effective policy for partition (NULL or "": none): the top level,
 * overridden key by key by the partition's section when the file has
 * one, env: merged by name. Pure. Returns 1 when the file has a section
 * for partition, else 0.
 */
int distenv_policy_effective(const struct distenv_policy_file *file,
			     const char *partition, struct distenv_policy *out);

/* The section for partition, or NULL. */
const struct distenv_policy_partition *distenv_policy_find_partition(
	const struct distenv_policy_file *file, const char *partition);

/*
 * Apply an effective policy to site, which holds the plugstack values
 * (distenv_parse_plugstack). Precedence: a plugstack argument given on
 * the line (site->given) wins over the file; the file wins over the
 * built-in defaults. partition (may be NULL) is kept in site->partition
 * for the reasons shown to users.
 */
void distenv_policy_apply(const struct distenv_policy *policy,
			  const char *partition, struct distenv_site *site);

/*
 * The site settings for a task: base (the plugstack values) with file's
 * effective policy for the task's SLURM_JOB_PARTITION (from envp)
 * applied. file NULL: base as it is. Pure.
 */
void distenv_policy_site_for_env(const struct distenv_policy_file *file,
				 const struct distenv_site *base,
				 const char *const *envp,
				 struct distenv_site *out);

/* Names for messages and check-config: "ipv4", "auto", "shared", ... */
const char *distenv_family_name(enum distenv_family family);
const char *distenv_hca_mode_name(enum distenv_hca_mode mode);
const char *distenv_storage_kind_name(enum distenv_storage_kind kind);

/*
 * The loader (adapter): read path with distenv_file_read
 * (distenv_sys_file.h: a symbolic link, FIFO, directory or device is
 * refused), a regular file of at most DISTENV_POLICY_FILE_MAX bytes that
 * no one but root can write: owner root (uid 0) and neither
 * group- nor other-writable (the plugin reads it as root in slurmstepd;
 * a file a user could write would let them steer other users' jobs).
 * flags DISTENV_POLICY_LOAD_TRUST_OWNER also accepts a file owned by the
 * calling user (tests, drafts checked with `distenv check-config
 * --trust-owner`); the plugin always passes DISTENV_POLICY_LOAD_STRICT.
 * Then distenv_policy_parse. Errors name the file and the reason (errno
 * text, owner, mode) and say what to do.
 */
#define DISTENV_POLICY_LOAD_STRICT 0
#define DISTENV_POLICY_LOAD_TRUST_OWNER 0x1
int distenv_policy_load(const char *path, int flags,
			struct distenv_policy_file *out,
			struct distenv_error *err);

#endif
