/*
 * spank_exit.c: slurmstepd, slurm_spank_exit, once per step per node
 * when the step ends (root): remove the directory of resolved copies
 * that --distenv-lf-config wrote for this step on this node
 * (lf_dir.h: under --distenv-lf-dir, the site's lf_dir:, TMPDIR or
 * /tmp, chosen the same way here), so that /tmp does not fill with one
 * per step.
 *
 * The directory is the user's, under a directory the user may have
 * chosen, so root never touches it: a child process drops to the job's
 * uid and gid (setgroups/setresgid/setresuid, as slurmstepd does before
 * exec), opens the directory with O_NOFOLLOW | O_DIRECTORY, checks that
 * it is the user's own, removes the regular files in it with unlinkat(2)
 * and then the directory. Nothing else is removed, and nothing is reported: a
 * directory that is gone or not as expected is left as it is.
 */
#define _GNU_SOURCE /* setresuid, setresgid */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "distenv_env.h"
#include "lf_prepare.h"
#include "spank_state.h"

static void remove_as_user(const char *dir, uid_t uid, gid_t gid)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
	    setresuid(uid, uid, uid) || getuid() != uid)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_uid != uid || !(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			unlinkat(fd, e->d_name, 0);
	closedir(d);
	rmdir(dir);
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int distenv_remote_exit(spank_t sp)
{
	const struct distenv_request *r = &distenv_state.req;
	struct distenv_step_ids ids;
	uint32_t restart = 0;
	char tmpdir[4096] = "", count[16] = "", dir[4200];
	char site_dir[DISTENV_SITE_PATH_MAX];
	struct lf_dir_choice c;
	uid_t uid;
	gid_t gid;
	pid_t pid;

	/* the ids the preparation named the directory with (spank_lf.c) */
	if (!r->lf_config[0] ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	    distenv_spank_step_ids(sp, &ids) ||
	    ids.step_id >= SLURM_MAX_NORMAL_STEP_ID)
		return 0;
	spank_getenv(sp, "TMPDIR", tmpdir, sizeof(tmpdir));
	if (spank_getenv(sp, "SLURM_RESTART_COUNT", count, sizeof(count)) ==
		    ESPANK_SUCCESS &&
	    distenv_parse_u32(count, 1000000, &restart))
		restart = 0;
	distenv_lf_site_dir(sp, site_dir, sizeof(site_dir));
	lf_dir_choose(r->lf_dir, site_dir, tmpdir, &c);
	lf_dir_prefer_mounted(&c, lf_container_default_dir(&distenv_state.pyxis,
							   is_dir));
	lf_resolved_dir(c.base, (unsigned) uid, ids.job_id, ids.step_id,
			ids.node_id, restart, dir, sizeof(dir));
	pid = fork();
	if (pid == 0) {
		remove_as_user(dir, uid, gid);
		_exit(0);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	return 0;
}
