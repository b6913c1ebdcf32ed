/* lf_dir.c: the base folder of the resolved copies (lf_dir.h). */
#include "lf_dir.h"

#include <stdio.h>
#include <string.h>

#define BLANKS " \t\n\r\v\f"

/*
 * LLaMA-Factory 0.9.3-0.9.5's launcher.py joins the arguments of
 * `llamafactory-cli train` into torchrun's command line with spaces and
 * splits it again on whitespace (str.split), so a config path holding a
 * space or a tab reaches the trainers as two arguments and the run stops.
 * A TMPDIR with whitespace in it is passed over for /tmp (and the copy's
 * header says so, lf_prepare.c); --distenv-lf-dir and lf_dir: refuse
 * blanks outright (distenv_parse_lf_dir).
 */
const char *lf_resolved_base(const char *tmpdir)
{
	if (!tmpdir || !tmpdir[0] || tmpdir[strcspn(tmpdir, BLANKS)])
		return "/tmp";
	return tmpdir;
}

void lf_dir_choose(const char *option, const char *site, const char *tmpdir,
		   struct lf_dir_choice *out)
{
	if (option && option[0]) {
		out->base = option;
		out->source = LF_DIR_FROM_OPTION;
	} else if (site && site[0]) {
		out->base = site;
		out->source = LF_DIR_FROM_SITE;
	} else {
		out->base = lf_resolved_base(tmpdir);
		out->source = out->base == tmpdir ? LF_DIR_FROM_TMPDIR :
			      tmpdir && tmpdir[0] ? LF_DIR_FROM_TMP_BLANK :
						    LF_DIR_FROM_TMP;
	}
}

void lf_dir_prefer_mounted(struct lf_dir_choice *out, const char *mounted)
{
	if (!mounted || out->source == LF_DIR_FROM_OPTION ||
	    out->source == LF_DIR_FROM_SITE)
		return;
	out->base = mounted;
	out->source = LF_DIR_FROM_MOUNT;
}

const char *lf_dir_source_text(enum lf_dir_source source)
{
	switch (source) {
	case LF_DIR_FROM_MOUNT:
		return "the first writable --container-mounts directory "
		       "(pyxis step, no --distenv-lf-dir)";
	case LF_DIR_FROM_OPTION:
		return "--distenv-lf-dir";
	case LF_DIR_FROM_SITE:
		return "the site file's lf_dir:";
	case LF_DIR_FROM_TMPDIR:
		return "TMPDIR";
	case LF_DIR_FROM_TMP_BLANK:
		return "the default /tmp (TMPDIR holds whitespace)";
	default:
		return "the default /tmp (TMPDIR is not set)";
	}
}

int lf_dir_under_tmp(const char *path)
{
	while (path[0] == '/' && path[1] == '/')
		path++;
	return strncmp(path, "/tmp", 4) == 0 &&
	       (path[4] == '\0' || path[4] == '/');
}

void lf_resolved_dir(const char *base, unsigned uid, uint32_t job_id,
		     uint32_t step_id, uint32_t node_id, uint32_t restart,
		     char *buf, size_t len)
{
	size_t used;

	snprintf(buf, len, "%s/distenv-%u-%u.%u-%u", base, uid, job_id, step_id,
		 node_id);
	used = strlen(buf);
	if (restart && used < len)
		snprintf(buf + used, len - used, "-r%u", restart);
}
