/* lf_fstype.c: statfs magic numbers to node-local / shared storage. */
#include "lf_fstype.h"

#include <string.h>

struct fs_magic {
	uint64_t magic;
	const char *name;
	enum lf_storage storage;
};

static const struct fs_magic table[] = {
	/* Node-local: linux/magic.h (Linux 6.1 uapi) unless noted. */
	{ 0xEF53, "ext2/3/4", LF_STORAGE_LOCAL }, /* EXT4_SUPER_MAGIC */
	{ 0x58465342, "xfs", LF_STORAGE_LOCAL }, /* XFS_SUPER_MAGIC */
	{ 0x9123683E, "btrfs", LF_STORAGE_LOCAL }, /* BTRFS_SUPER_MAGIC */
	{ 0x01021994, "tmpfs", LF_STORAGE_LOCAL }, /* TMPFS_MAGIC */
	{ 0x858458f6, "ramfs", LF_STORAGE_LOCAL }, /* RAMFS_MAGIC */
	{ 0x794c7630, "overlay", LF_STORAGE_LOCAL }, /* OVERLAYFS_SUPER_MAGIC */
	{ 0xF2F52010, "f2fs", LF_STORAGE_LOCAL }, /* F2FS_SUPER_MAGIC */
	{ 0x3434, "nilfs", LF_STORAGE_LOCAL }, /* NILFS_SUPER_MAGIC */
	{ 0x52654973, "reiserfs", LF_STORAGE_LOCAL }, /* REISERFS_SUPER_MAGIC */
	/* OpenZFS include/sys/fs/zfs.h: ZFS_SUPER_MAGIC 0x2fc12fc1 */
	{ 0x2fc12fc1, "zfs", LF_STORAGE_LOCAL },
	/* Shared: linux/magic.h */
	{ 0x6969, "nfs", LF_STORAGE_SHARED }, /* NFS_SUPER_MAGIC */
	{ 0x00c36400, "cephfs", LF_STORAGE_SHARED }, /* CEPH_SUPER_MAGIC */
	{ 0xFF534D42, "cifs", LF_STORAGE_SHARED }, /* CIFS_SUPER_MAGIC */
	{ 0xFE534D42, "smb2", LF_STORAGE_SHARED }, /* SMB2_SUPER_MAGIC */
	{ 0x517B, "smb", LF_STORAGE_SHARED }, /* SMB_SUPER_MAGIC */
	{ 0x6B414653, "afs", LF_STORAGE_SHARED }, /* AFS_FS_MAGIC */
	{ 0x5346414F, "openafs", LF_STORAGE_SHARED }, /* AFS_SUPER_MAGIC */
	{ 0x7461636f, "ocfs2", LF_STORAGE_SHARED }, /* OCFS2_SUPER_MAGIC */
	{ 0x73757245, "coda", LF_STORAGE_SHARED }, /* CODA_SUPER_MAGIC */
	{ 0x01021997, "9p", LF_STORAGE_SHARED }, /* V9FS_MAGIC */
	/* Linux fs/gfs2/incore.h / gfs2_ondisk.h: GFS2_MAGIC */
	{ 0x01161970, "gfs2", LF_STORAGE_SHARED },
	/* Lustre lustre/include/uapi/linux/lustre/lustre_user.h:
	 * LL_SUPER_MAGIC */
	{ 0x0BD00BD0, "lustre", LF_STORAGE_SHARED },
	/* IBM Storage Scale (GPFS): f_type is "GPFS" in ASCII, as its
	 * statfs reports it (and coreutils' stat --file-system names it) */
	{ 0x47504653, "gpfs", LF_STORAGE_SHARED },
	/* BeeGFS client source (client_module, fhgfs/BEEGFS_MAGIC) */
	{ 0x19830326, "beegfs", LF_STORAGE_SHARED },
	/* Panasas PanFS, as coreutils' src/stat.c lists it (S_MAGIC_PANFS) */
	{ 0xAAD7AAEA, "panfs", LF_STORAGE_SHARED },
	/* FUSE (linux/magic.h FUSE_SUPER_MAGIC): GlusterFS, JuiceFS, sshfs
	 * or a local FUSE file system; not knowable from the number. WekaFS
	 * and others whose numbers are not published are also left to the
	 * site policy. */
	{ 0x65735546, "fuse", LF_STORAGE_UNKNOWN },
};

const char *lf_storage_name(enum lf_storage s)
{
	switch (s) {
	case LF_STORAGE_LOCAL:
		return "local";
	case LF_STORAGE_SHARED:
		return "shared";
	default:
		return "unknown";
	}
}

enum lf_storage lf_fstype_classify(uint64_t f_type, const char **fs_name)
{
	size_t i;

	/* f_type is a signed long on some ABIs: compare the low 32 bits. */
	f_type &= 0xFFFFFFFFu;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].magic == f_type) {
			if (fs_name)
				*fs_name = table[i].name;
			return table[i].storage;
		}
	}
	if (fs_name)
		*fs_name = "unknown";
	return LF_STORAGE_UNKNOWN;
}

/* 1 when mount (len bytes) is path or a parent directory of it. */
static int covers(const char *mount, size_t len, const char *path)
{
	while (len > 1 && mount[len - 1] == '/')
		len--;
	if (len == 1 && mount[0] == '/')
		return path[0] == '/';
	return !strncmp(mount, path, len) &&
	       (path[len] == '\0' || path[len] == '/');
}

int lf_site_storage(const char *policy, const char *path, enum lf_storage *out,
		    struct distenv_error *err)
{
	const char *p = policy;
	size_t best = 0;

	*out = LF_STORAGE_UNKNOWN;
	while (p && *p) {
		const char *end, *colon, *mount;
		enum lf_storage kind;
		size_t n;

		p += strspn(p, ", \t\n");
		if (!*p)
			break;
		end = p + strcspn(p, ", \t\n");
		colon = memchr(p, ':', (size_t) (end - p));
		if (!colon)
			goto bad;
		if ((size_t) (colon - p) == 6 && !strncmp(p, "shared", 6))
			kind = LF_STORAGE_SHARED;
		else if ((size_t) (colon - p) == 5 && !strncmp(p, "local", 5))
			kind = LF_STORAGE_LOCAL;
		else
			goto bad;
		mount = colon + 1;
		n = (size_t) (end - mount);
		if (!n || mount[0] != '/')
			goto bad;
		if (covers(mount, n, path) && n >= best) {
			best = n;
			*out = kind;
		}
		p = end;
		continue;
bad:
		return distenv_error_set(err, "storage policy",
					 "write entries as shared:/mount or "
					 "local:/mount",
					 "malformed entry '%.*s'",
					 (int) (end - p), p);
	}
	return 0;
}
