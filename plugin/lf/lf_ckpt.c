/* lf_ckpt.c: the checkpoint a restarted job resumes from (rules in the .h). */
#include "lf_ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lf_parse_resume(const char *value, const char *where, int *mode, char *path,
		    size_t path_len, struct distenv_error *err)
{
	if (!value || !value[0])
		return distenv_error_set(err, where,
					 "give auto, off or a checkpoint "
					 "directory",
					 "empty value");
	if (!strcmp(value, "auto")) {
		*mode = LF_RESUME_AUTO;
		path[0] = '\0';
		return 0;
	}
	if (!strcmp(value, "off")) {
		*mode = LF_RESUME_OFF;
		path[0] = '\0';
		return 0;
	}
	if (strlen(value) >= path_len)
		return distenv_error_set(err, where, "use a shorter path",
					 "checkpoint path longer than %zu "
					 "bytes",
					 path_len - 1);
	*mode = LF_RESUME_PATH;
	snprintf(path, path_len, "%s", value);
	return 0;
}

/* N of a top-level "checkpoint-N/" entry, else -1. */
static long long ckpt_number(const char *p)
{
	unsigned long long n;
	char *end;

	if (strncmp(p, "checkpoint-", 11) || p[11] < '0' || p[11] > '9')
		return -1;
	n = strtoull(p + 11, &end, 10);
	if (strcmp(end, "/") || n > 0x7fffffffffffffffULL)
		return -1;
	return (long long) n;
}

static int desc(const void *a, const void *b)
{
	long long x = *(const long long *) a, y = *(const long long *) b;

	return x < y ? 1 : x > y ? -1 : 0;
}

int lf_ckpt_choose(const struct lf_listing *ls,
		   const struct lf_resume_input *in, lf_latest_fn latest,
		   void *ctx, struct lf_ckpt_choice *ch)
{
	long long *n;
	size_t i, count = 0;

	memset(ch, 0, sizeof(*ch));
	n = ls->count ? calloc(ls->count, sizeof(*n)) : NULL;
	if (!n)
		return 0;
	for (i = 0; i < ls->count; i++) {
		long long v = ckpt_number(ls->paths[i]);

		if (v >= 0)
			n[count++] = v;
	}
	ch->candidates = count;
	qsort(n, count, sizeof(*n), desc);
	for (i = 0; i < count; i++) {
		struct lf_resume_input ri = *in;
		struct lf_resume_result r;
		struct distenv_error e;
		char name[64];

		if (i && n[i] == n[i - 1])
			continue;
		snprintf(name, sizeof(name), "checkpoint-%lld", n[i]);
		ri.checkpoint = name;
		ri.latest_tag = latest ? latest(ctx, name) : NULL;
		distenv_error_clear(&e);
		if (!lf_resume_check(ls, &ri, &r, &e)) {
			ch->found = 1;
			snprintf(ch->chosen, sizeof(ch->chosen), "%s", name);
			break;
		}
		if (ch->nskipped < LF_CKPT_SKIPPED_MAX) {
			snprintf(ch->skipped[ch->nskipped].name,
				 sizeof(ch->skipped[0].name), "%s", name);
			ch->skipped[ch->nskipped].missing = r.missing_required;
			snprintf(ch->skipped[ch->nskipped].first,
				 sizeof(ch->skipped[0].first), "%s",
				 r.listed ? r.missing[0] : "");
			snprintf(ch->skipped[ch->nskipped].why,
				 sizeof(ch->skipped[0].why), "%s",
				 r.missing_required ? "" : e.what);
		}
		ch->nskipped++;
	}
	free(n);
	return 0;
}

void lf_ckpt_describe(const struct lf_ckpt_choice *ch, char *buf, size_t len)
{
	size_t i, o;

	if (ch->found)
		o = (size_t) snprintf(buf, len,
				      "resume from %s (newest "
				      "complete on this node of %zu)",
				      ch->chosen, ch->candidates);
	else
		o = (size_t) snprintf(buf, len,
				      "no checkpoint complete on "
				      "this node (%zu in output_dir): start "
				      "from step 0",
				      ch->candidates);
	for (i = 0; i < ch->nskipped && i < LF_CKPT_SKIPPED_MAX && o < len; i++)
		if (ch->skipped[i].why[0])
			o += (size_t) snprintf(buf + o, len - o,
					       "; skipped %s: %s",
					       ch->skipped[i].name,
					       ch->skipped[i].why);
		else
			o += (size_t) snprintf(buf + o, len - o,
					       "; skipped %s: partial, %zu "
					       "file(s) missing here, first %s",
					       ch->skipped[i].name,
					       ch->skipped[i].missing,
					       ch->skipped[i].first);
	if (ch->nskipped > LF_CKPT_SKIPPED_MAX && o < len)
		snprintf(buf + o, len - o, "; and %zu more skipped",
			 ch->nskipped - LF_CKPT_SKIPPED_MAX);
}
