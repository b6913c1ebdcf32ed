/*
 * distenv_policy_load.c: the adapter that reads the site policy file from
 * disk, refusing anything a user could have planted or changed, then
 * hands the bytes to the pure parser.
 */
#include "distenv_policy.h"

#include "distenv_sys_file.h"

int distenv_policy_load(const char *path, int flags,
			struct distenv_policy_file *out,
			struct distenv_error *err)
{
	/* Read as root in slurmstepd: only root may own or write it, and
	 * a FIFO put in its place must not hang it (distenv_policy.h). */
	struct distenv_file_rules rules = {
		.name = "the site policy file",
		.fix = "check config= on the plugstack line",
		.max = DISTENV_POLICY_FILE_MAX,
		.owner = (flags & DISTENV_POLICY_LOAD_TRUST_OWNER) ?
				 DISTENV_FILE_ROOT_OR_SELF :
				 DISTENV_FILE_ROOT,
	};
	struct distenv_file file;
	int rc;

	distenv_policy_file_free(out);
	if (!path || path[0] != '/')
		return distenv_error_set(err, path ? path : "config=",
					 "give the absolute path of the file",
					 "not an absolute path");
	if (distenv_file_read(path, &rules, &file, err))
		return -1;
	rc = distenv_policy_parse(file.data, file.len, path, out, err);
	distenv_file_free(&file);
	return rc;
}
