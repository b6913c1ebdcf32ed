/* lf_sys.c: file, statfs and directory adapters (contracts in lf_sys.h). */
#include "lf_sys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

#include "distenv_env.h"
#include "distenv_sys.h"
#include "lf_doc.h"

const struct distenv_file_rules lf_sys_yaml_rules = {
	.name = "the training YAML",
	.max = LF_DOC_MAX_BYTES,
};
const struct distenv_file_rules lf_sys_ds_rules = {
	.name = "the DeepSpeed config",
	.max = LF_DOC_MAX_BYTES,
};
const struct distenv_file_rules lf_sys_model_rules = {
	.name = "the model's config.json",
	.max = LF_DOC_MAX_BYTES,
};
/* "global_step42\n" as DeepSpeed writes it: a line. */
const struct distenv_file_rules lf_sys_latest_rules = {
	.name = "the checkpoint's latest tag",
	.max = 4096,
};

int lf_sys_storage(const char *path, const char *policy, enum lf_storage *out,
		   const char **fs_name, struct distenv_error *err)
{
	char abs[PATH_MAX], *slash;
	struct statfs sf;

	*out = LF_STORAGE_UNKNOWN;
	*fs_name = "unknown";
	if (path[0] != '/') {
		if (!getcwd(abs, sizeof(abs)))
			return distenv_error_set(err, path, NULL,
						 "cannot resolve: %s",
						 strerror(errno));
		if (strlen(abs) + 1 + strlen(path) + 1 > sizeof(abs))
			return distenv_error_set(err, path, NULL,
						 "path too long");
		strcat(abs, "/");
		strcat(abs, path);
	} else {
		snprintf(abs, sizeof(abs), "%s", path);
	}
	if (policy && policy[0]) {
		if (lf_site_storage(policy, abs, out, err))
			return -1;
		if (*out != LF_STORAGE_UNKNOWN) {
			*fs_name = "site policy";
			return 0;
		}
	}
	/* output_dir may not exist before the first run: its nearest
	 * existing parent is where it will be created. */
	while (statfs(abs, &sf) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return distenv_error_set(err, abs, NULL,
						 "statfs failed: %s",
						 strerror(errno));
		slash = strrchr(abs, '/');
		if (!slash)
			return 0;
		if (slash == abs) {
			abs[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
	*out = lf_fstype_classify((uint64_t) sf.f_type, fs_name);
	return 0;
}

#define LIST_MAX 65536

static int add(struct lf_sys_listing *l, const char *path)
{
	if (l->ls.count >= LIST_MAX)
		return 0;
	if (l->ls.count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **np = realloc(l->paths, cap * sizeof(*np));

		if (!np)
			return -1;
		l->paths = np;
		l->cap = cap;
	}
	l->paths[l->ls.count] = strdup(path);
	if (!l->paths[l->ls.count])
		return -1;
	l->ls.count++;
	l->ls.paths = (const char *const *) l->paths;
	return 0;
}

static int walk(const char *dir, const char *rel, int depth,
		struct lf_sys_listing *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char sub[PATH_MAX], subrel[PATH_MAX];

	if (!d)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ?
			       0 :
			       -1;
	while ((e = readdir(d))) {
		int is_dir;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_UNKNOWN) {
			struct stat st;

			is_dir = !lstat(sub, &st) && S_ISDIR(st.st_mode);
		} else {
			is_dir = e->d_type == DT_DIR;
		}
		snprintf(subrel, sizeof(subrel), "%s%s%s%s", rel,
			 rel[0] ? "/" : "", e->d_name, is_dir ? "/" : "");
		if (add(out, subrel)) {
			closedir(d);
			return -1;
		}
		if (is_dir && depth > 1) {
			subrel[strlen(subrel) - 1] = '\0';
			if (walk(sub, subrel, depth - 1, out)) {
				closedir(d);
				return -1;
			}
		}
	}
	closedir(d);
	return 0;
}

int lf_sys_list(const char *dir, int depth, const char *prefix,
		struct lf_sys_listing *out, struct distenv_error *err)
{
	memset(out, 0, sizeof(*out));
	if (prefix && prefix[0]) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/", prefix);
		if (add(out, p))
			goto fail;
	}
	if (walk(dir, prefix ? prefix : "", depth, out))
		goto fail;
	return 0;
fail:
	lf_sys_listing_free(out);
	return distenv_error_set(err, dir, NULL, "cannot list: %s",
				 strerror(errno ? errno : ENOMEM));
}

void lf_sys_listing_free(struct lf_sys_listing *l)
{
	size_t i;

	for (i = 0; i < l->ls.count; i++)
		free(l->paths[i]);
	free(l->paths);
	memset(l, 0, sizeof(*l));
}

uint64_t lf_sys_node_ram(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (uint64_t) pages * (uint64_t) size : 0;
}

int lf_sys_private_dir(const char *dir, struct distenv_error *err)
{
	struct stat st;

	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno != EEXIST)
		return distenv_error_set(err, dir,
					 "give --distenv-lf-dir (or TMPDIR) "
					 "an existing, writable directory",
					 "cannot create: %s", strerror(errno));
	if (lstat(dir, &st) < 0)
		return distenv_error_set(err, dir, NULL, "cannot stat: %s",
					 strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077))
		return distenv_error_set(err, dir,
					 "remove it, or give "
					 "--distenv-lf-dir (or TMPDIR) "
					 "another directory",
					 "exists but is not a private "
					 "directory of this user");
	return 0;
}

/* Write data to a new temporary file in dir, into tmp; 0 or -1 (errno). */
static int write_temp(const char *dir, const char *name, const char *data,
		      size_t len, char *tmp, size_t tmplen)
{
	size_t done = 0;
	int fd, e;

	snprintf(tmp, tmplen, "%s/.%s.%ld", dir, name, (long) getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		done += (size_t) n;
	}
	if (fsync(fd) < 0)
		goto fail;
	close(fd);
	return 0;
fail:
	e = errno ? errno : EIO;
	close(fd);
	unlink(tmp);
	errno = e;
	return -1;
}

/* 1 when path holds exactly data (read with distenv_file_read's checks;
 * one byte over len is enough to tell it differs). */
static int same_bytes(const char *path, const char *data, size_t len)
{
	const struct distenv_file_rules rules = { .max = len + 1 };
	struct distenv_file f;
	int same;

	if (distenv_file_read(path, &rules, &f, NULL))
		return 0;
	same = f.len == len && memcmp(f.data, data, len) == 0;
	distenv_file_free(&f);
	return same;
}

static int write_file(const char *dir, const char *name, const char *data,
		      size_t len, int replace, struct distenv_error *err)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int e;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	if (replace && same_bytes(dst, data, len))
		return 0;
	if (write_temp(dir, name, data, len, tmp, sizeof(tmp)))
		return distenv_error_set(err, tmp, NULL, "cannot create: %s",
					 strerror(errno));
	if (replace ? rename(tmp, dst) == 0 :
		      link(tmp, dst) == 0 || errno == EEXIST) {
		unlink(tmp);
		return 0;
	}
	e = errno;
	unlink(tmp);
	return distenv_error_set(err, dst, NULL, "cannot write: %s",
				 strerror(e));
}

int lf_sys_write_new(const char *dir, const char *name, const char *data,
		     size_t len, struct distenv_error *err)
{
	return write_file(dir, name, data, len, 0, err);
}

int lf_sys_write_private(const char *dir, const char *name, const char *data,
			 size_t len, struct distenv_error *err)
{
	return write_file(dir, name, data, len, 1, err);
}

/* mkdir -p path (mode 0777 less the umask); 0, or -1 with errno. */
static int make_dirs(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0777) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

int lf_sys_mark_write(const char *output_dir, const char *node,
		      const char *text, struct distenv_error *err)
{
	char dir[PATH_MAX];
	int n = snprintf(dir, sizeof(dir), "%s/" LF_MARK_SUBDIR, output_dir);

	if (n < 0 || (size_t) n >= sizeof(dir))
		return distenv_error_set(err, output_dir, NULL,
					 "path too long");
	if (make_dirs(dir))
		return distenv_error_set(err, dir,
					 "make output_dir writable on every "
					 "node of the step",
					 "cannot create: %s", strerror(errno));
	return write_file(dir, node, text, strlen(text), 1, err);
}

int lf_sys_mark_read(const char *output_dir, const char *node, char *buf,
		     size_t len)
{
	const struct distenv_file_rules rules = {
		.name = "a storage mark",
		.max = LF_MARK_TEXT_MAX,
	};
	char path[PATH_MAX];
	struct distenv_file f;
	int n = snprintf(path, sizeof(path), "%s/" LF_MARK_SUBDIR "/%s",
			 output_dir, node);

	buf[0] = '\0';
	if (n < 0 || (size_t) n >= sizeof(path) ||
	    distenv_file_read(path, &rules, &f, NULL))
		return 0;
	snprintf(buf, len, "%s", f.data);
	distenv_file_free(&f);
	return 1;
}

void lf_sys_mark_partner(const char *const *env, uint32_t node_id,
			 uint32_t nnodes, char *buf, size_t len)
{
	int idx = lf_mark_partner_index(node_id, nnodes);

	buf[0] = '\0';
	if (idx < 0 ||
	    distenv_nth_host(distenv_env_get(env, "SLURM_STEP_NODELIST"),
			     (uint32_t) idx, "SLURM_STEP_NODELIST", buf, len,
			     NULL))
		buf[0] = '\0';
}
