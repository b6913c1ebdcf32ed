/*
 * fake_pyxis.c: a SPANK plugin for the tests only. It does to a task what
 * pyxis does (NVIDIA/pyxis v0.24.0, with enroot 4.1.2), with the same
 * kernel mechanisms, on machines where neither can be installed (no
 * Debian package, no registry). Never installed, never part of distenv.
 *
 *   srun --fake-pyxis=CONF ...        CONF: lines of
 *       image DIR                     the container's root file system
 *       env NAME=VALUE                the image's environment
 *       mount SRC DST                 --container-mounts=SRC:DST (a DST
 *                                     under /tmp is made in the fresh
 *                                     tmpfs, as enroot makes a missing
 *                                     mount point; any other must exist
 *                                     in the image, which stays as it is)
 *       hook pytorch                  enroot's 50-slurm-pytorch.sh is on
 *   srun --container-image=DIR [--container-mounts=SRC[:DST],...]
 *        [--container-workdir=DIR] [--container-env=NAME,...] ...
 *       pyxis's own option names, for the same "image" and "mount"
 *       lines (without CONF or beside it), the working directory in
 *       the container, and the names whose "env" lines are skipped
 *       (the task's value kept, as pyxis does): distenv reads a step's
 *       pyxis options by these names (plugin/spank/spank_pyxis.c)
 *
 * In slurm_spank_task_init, as pyxis does there for every task
 * (pyxis_slurmstepd.c):
 * - every "env" line is set in the task's environment over what is there
 *   (pyxis copies the container's environment with overwrite);
 * - when PYTORCH_VERSION is among them, RANK=SLURM_PROCID and
 *   LOCAL_RANK=SLURM_LOCALID (pyxis does so for PyTorch images), and,
 *   with "hook pytorch", the lines of enroot's optional hook
 *   (conf/hooks/extra/50-slurm-pytorch.sh) for the names the image's
 *   environment does not set: MASTER_ADDR the first host name of the
 *   step, MASTER_PORT 61000 + the job id modulo 4536;
 * - the task moves into a mount namespace of its own whose root is DIR,
 *   with a fresh tmpfs at /tmp (enroot, conf/mounts/10-system.fstab) and
 *   the "mount" binds: unshare(2), then chroot(2) where pyxis setns(2)es
 *   into the container enroot made; either way the task's "/" is the
 *   image's from then on.
 * Where it stands in plugstack.conf decides whether distenv's task_init
 * runs before (on the host) or after (in the container), as with pyxis.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(pyxis, 1); /* pyxis's name: its options reach the environment under it */

static char conf[4096], opt_image[1024], opt_mounts[4096], opt_workdir[1024],
	opt_env[1024];

static int opt_conf(int val, const char *optarg, int remote)
{
	(void) val;
	(void) remote;
	if (!optarg || strlen(optarg) >= sizeof(conf))
		return -1;
	strcpy(conf, optarg);
	return 0;
}

static int opt_copy(int val, const char *optarg, int remote)
{
	char *const to_of[] = { opt_image, opt_mounts, opt_workdir, opt_env };
	const size_t len_of[] = { sizeof(opt_image), sizeof(opt_mounts),
				  sizeof(opt_workdir), sizeof(opt_env) };
	char *to = to_of[val];
	size_t len = len_of[val];

	(void) remote;
	if (!optarg || strlen(optarg) >= len)
		return -1;
	strcpy(to, optarg);
	return 0;
}

struct spank_option spank_options[] = {
	{ "fake-pyxis", "CONF",
	  "tests: do what pyxis does to the task, as CONF describes", 1, 0,
	  opt_conf },
	{ "container-image", "DIR", "tests: as CONF's image line", 1, 0,
	  opt_copy },
	{ "container-mounts", "SRC[:DST],...", "tests: as CONF's mount lines",
	  1, 1, opt_copy },
	{ "container-workdir", "DIR", "tests: the working directory inside", 1,
	  2, opt_copy },
	{ "container-env", "NAME,...", "tests: keep the task's value", 1, 3,
	  opt_copy },
	SPANK_OPTIONS_TABLE_END,
};

/* What the image's environment sets, of the names that matter here. */
struct image_env {
	int pytorch, addr, port;
};

/* 1 when --container-env names name */
static int kept(const char *name)
{
	size_t n = strlen(name);
	const char *p = opt_env;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (len == n && !strncmp(p, name, n))
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

/* NAME=VALUE of an "env" line into the task, over what is there,
 * unless --container-env keeps the task's value. */
static int set_env(spank_t sp, char *line, struct image_env *ie)
{
	char *eq = strchr(line, '=');

	if (!eq)
		return -1;
	*eq = '\0';
	ie->pytorch |= !strcmp(line, "PYTORCH_VERSION");
	ie->addr |= !strcmp(line, "MASTER_ADDR");
	ie->port |= !strcmp(line, "MASTER_PORT");
	if (kept(line))
		return 0;
	return spank_setenv(sp, line, eq + 1, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* RANK and LOCAL_RANK from Slurm's task ids, as for a PyTorch image. */
static int pytorch_ranks(spank_t sp)
{
	char v[64];

	if (spank_getenv(sp, "SLURM_PROCID", v, sizeof(v)) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "RANK", v, 1) != ESPANK_SUCCESS)
		return -1;
	if (spank_getenv(sp, "SLURM_LOCALID", v, sizeof(v)) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "LOCAL_RANK", v, 1) != ESPANK_SUCCESS)
		return -1;
	return 0;
}

/* enroot's PyTorch hook: MASTER_ADDR and MASTER_PORT unless the image
 * sets them (the hook reads the container's environment file only). */
static int pytorch_hook(spank_t sp, int image_addr, int image_port)
{
	char nodes[4096], job[32], port[32], *first;
	hostlist_t hl;
	int rc = 0;

	if (spank_getenv(sp, "SLURM_STEP_NODELIST", nodes, sizeof(nodes)) !=
		    ESPANK_SUCCESS ||
	    spank_getenv(sp, "SLURM_JOB_ID", job, sizeof(job)) !=
		    ESPANK_SUCCESS)
		return -1;
	if (!image_addr) {
		hl = slurm_hostlist_create(nodes);
		first = hl ? slurm_hostlist_shift(hl) : NULL;
		rc = first && spank_setenv(sp, "MASTER_ADDR", first, 1) ==
				      ESPANK_SUCCESS ?
			     0 :
			     -1;
		free(first);
		if (hl)
			slurm_hostlist_destroy(hl);
	}
	if (rc == 0 && !image_port) {
		snprintf(port, sizeof(port), "%lu",
			 61000 + strtoul(job, NULL, 10) % 4536);
		rc = spank_setenv(sp, "MASTER_PORT", port, 1) == ESPANK_SUCCESS ?
			     0 :
			     -1;
	}
	return rc;
}

/* mkdir -p path, for a mount point under the image's fresh /tmp. */
static int make_dirs(char *path)
{
	char *p;

	for (p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

/* A mount namespace of the task's own, rooted at image. */
static int enter(const char *image, char mounts[][2][1024], int n)
{
	char path[2048];
	int i;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount(image, image, NULL, MS_BIND | MS_REC, NULL))
		return -1;
	snprintf(path, sizeof(path), "%s/tmp", image);
	if (mount("tmpfs", path, "tmpfs", 0, "mode=755"))
		return -1;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s%s", image, mounts[i][1]);
		if (!strncmp(mounts[i][1], "/tmp/", 5) && make_dirs(path))
			return -1;
		if (mount(mounts[i][0], path, NULL, MS_BIND | MS_REC, NULL))
			return -1;
	}
	if (chroot(image) || chdir(opt_workdir[0] ? opt_workdir : "/"))
		return -1;
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	static char mounts[8][2][1024];
	char line[2048], image[1024] = "";
	/* a name --container-env keeps is in the container's environment,
	 * so enroot's hook leaves it alone */
	struct image_env ie = { 0, kept("MASTER_ADDR"), kept("MASTER_PORT") };
	int n = 0, hook = 0, rc = 0;
	FILE *f;

	(void) ac;
	(void) av;
	if (opt_image[0]) {
		char *rest = opt_mounts, *e;

		snprintf(image, sizeof(image), "%s", opt_image);
		/* SRC[:DST[:FLAGS]], one path for both (pyxis's args.c) */
		while ((e = strsep(&rest, ",")) && *e && n < 8) {
			char *src = strsep(&e, ":"), *dst = strsep(&e, ":");

			snprintf(mounts[n][0], sizeof(mounts[n][0]), "%s", src);
			snprintf(mounts[n][1], sizeof(mounts[n][1]), "%s",
				 dst ? dst : src);
			n++;
		}
	}
	if (!conf[0]) {
		if (image[0] && enter(image, mounts, n)) {
			slurm_error("fake_pyxis: cannot set the task up: %m");
			return -1;
		}
		return 0;
	}
	f = fopen(conf, "r");
	if (!f) {
		slurm_error("fake_pyxis: %s: %m", conf);
		return -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "image ", 6))
			snprintf(image, sizeof(image), "%s", line + 6);
		else if (!strncmp(line, "env ", 4))
			rc = set_env(sp, line + 4, &ie);
		else if (!strcmp(line, "hook pytorch"))
			hook = 1;
		else if (!strncmp(line, "mount ", 6) && n < 8 &&
			 sscanf(line + 6, "%1023s %1023s", mounts[n][0],
				mounts[n][1]) == 2)
			n++;
	}
	fclose(f);
	if (rc == 0 && ie.pytorch)
		rc = pytorch_ranks(sp);
	if (rc == 0 && ie.pytorch && hook)
		rc = pytorch_hook(sp, ie.addr, ie.port);
	if (rc == 0 && image[0])
		rc = enter(image, mounts, n);
	if (rc)
		slurm_error("fake_pyxis: cannot set the task up: %m");
	return rc;
}
