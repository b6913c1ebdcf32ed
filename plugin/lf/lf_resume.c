/* lf_resume.c: the resume preflight over a listing (rules in the .h). */
#include "lf_resume.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int has(const struct lf_listing *ls, const char *path)
{
	size_t i, n = strlen(path);

	for (i = 0; i < ls->count; i++) {
		const char *p = ls->paths[i];

		if (!strcmp(p, path))
			return 1;
		/* a directory listed as "dir/" */
		if (!strncmp(p, path, n) && p[n] == '/' && p[n + 1] == '\0')
			return 1;
	}
	return 0;
}

int lf_last_checkpoint(const struct lf_listing *ls, char *name, size_t len)
{
	unsigned long long best = 0;
	int found = 0;
	size_t i;

	for (i = 0; i < ls->count; i++) {
		const char *p = ls->paths[i], *d;
		char *end;
		unsigned long long n;

		if (strncmp(p, "checkpoint-", 11))
			continue;
		d = p + 11;
		if (*d < '0' || *d > '9')
			continue;
		n = strtoull(d, &end, 10);
		/* a directory at the top: "checkpoint-N/" exactly */
		if (strcmp(end, "/"))
			continue;
		if (!found || n > best) {
			best = n;
			found = 1;
		}
	}
	if (found)
		snprintf(name, len, "checkpoint-%llu", best);
	return found;
}

static void note(struct lf_resume_result *r, const char *path, int required)
{
	if (required)
		r->missing_required++;
	else
		r->missing_rng++;
	if (r->listed < LF_RESUME_MISSING_MAX)
		snprintf(r->missing[r->listed++], sizeof(r->missing[0]), "%s",
			 path);
}

static void need(const struct lf_listing *ls, struct lf_resume_result *r,
		 int required, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void need(const struct lf_listing *ls, struct lf_resume_result *r,
		 int required, const char *fmt, ...)
{
	char path[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (!has(ls, path))
		note(r, path, required);
}

/* The optimizer-state names DeepSpeed writes, by the run's precision:
 * bf16_ and fp16_ for mixed precision, none for fp32 (runtime/engine.py,
 * _get_zero_ckpt_name). */
static const char *const optim_prefix[] = { "bf16_", "fp16_", "" };

/* Any of them for rank r: its index in optim_prefix, or -1. */
static int optim_of(const struct lf_listing *ls, const char *dir, uint32_t r)
{
	char path[512];
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path),
			 "%s/%szero_pp_rank_%u_mp_rank_00_optim_states.pt", dir,
			 optim_prefix[i], r);
		if (has(ls, path))
			return i;
	}
	return -1;
}

/* The tag directory DeepSpeed saved under: `latest`'s word when read,
 * else global_step<N> of checkpoint-<N>. */
static void resume_tag(const struct lf_resume_input *in, char *tag, size_t len)
{
	const char *ck = in->checkpoint;

	if (in->latest_tag && in->latest_tag[0])
		snprintf(tag, len, "%.*s",
			 (int) strcspn(in->latest_tag, " \t\r\n"),
			 in->latest_tag);
	else
		snprintf(tag, len, "global_step%s",
			 strchr(ck, '-') ? strchr(ck, '-') + 1 : "");
}

/* The ZeRO files of this node's ranks, ranks first to the node's last. */
static void need_zero_files(const struct lf_listing *ls,
			    const struct lf_resume_input *in,
			    const char *tagdir, uint32_t first,
			    struct lf_resume_result *r)
{
	uint32_t end = first + in->gpus_per_node, rank;
	int named = -1;

	/* a missing one is named as the node's other ranks name theirs
	 * (bf16_ when none is there) */
	for (rank = first; named < 0 && rank < end && rank < in->world_size;
	     rank++)
		named = optim_of(ls, tagdir, rank);
	if (in->zero_stage < 3)
		need(ls, r, 1, "%s/mp_rank_00_model_states.pt", tagdir);
	for (rank = first; rank < end && rank < in->world_size; rank++) {
		if (in->zero_stage == 3)
			need(ls, r, 1,
			     "%s/zero_pp_rank_%u_mp_rank_00_model_states.pt",
			     tagdir, rank);
		if (optim_of(ls, tagdir, rank) < 0) {
			char path[512];

			snprintf(
				path, sizeof(path),
				"%s/%szero_pp_rank_%u_mp_rank_00_optim_states.pt",
				tagdir, optim_prefix[named < 0 ? 0 : named],
				rank);
			note(r, path, 1);
		}
	}
}

/* lf_resume.h: DeepSpeed 0.19 leaves `latest` on node 0 only, so on
 * another node its absence says nothing of the save: alone it is
 * restored (with tag), with others it is named after them. */
static void restore_latest(struct lf_resume_result *r, const char *latest_path,
			   const char *tag)
{
	size_t i;

	for (i = 0; i < r->listed; i++)
		if (!strcmp(r->missing[i], latest_path))
			break;
	if (i < r->listed) {
		memmove(r->missing[i], r->missing[i + 1],
			sizeof(r->missing[0]) * (r->listed - i - 1));
		r->listed--;
	}
	if (r->missing_required == 1) {
		r->missing_required = 0;
		r->latest_restorable = 1;
		snprintf(r->tag, sizeof(r->tag), "%s", tag);
	} else {
		snprintf(r->missing[r->listed++], sizeof(r->missing[0]), "%s",
			 latest_path);
	}
}

static int fail_missing(const struct lf_resume_input *in,
			const struct lf_resume_result *r,
			struct distenv_error *err)
{
	char where[64], list[DISTENV_ERROR_TEXT];
	size_t i, used = 0;

	list[0] = '\0';
	for (i = 0; i < r->listed && used < sizeof(list) - 160 && i < 4; i++)
		used += (size_t) snprintf(list + used, sizeof(list) - used,
					  "%s%s", i ? ", " : "", r->missing[i]);
	snprintf(where, sizeof(where), "node %u", in->node_id);
	return distenv_error_set(err, where,
				 "save with save_on_each_node: true on "
				 "node-local disks (distenv decides it with "
				 "--distenv-save-on-each-node=auto), put "
				 "output_dir on shared storage, or copy the "
				 "files to this node",
				 "cannot resume from %s: %zu file(s) this "
				 "node's ranks need are missing: %s%s",
				 in->checkpoint,
				 r->missing_required + r->missing_rng, list,
				 r->listed > 4 ? ", ..." : "");
}

/* The rank of a ZeRO shard file directly under tagdir ("<tagdir>/
 * [bf16_|fp16_]zero_pp_rank_R_mp_rank_00_{model,optim}_states.pt"), or
 * -1 for any other path. */
static long shard_rank(const char *path, const char *tagdir)
{
	size_t n = strlen(tagdir), k;
	const char *p;
	char *end;
	unsigned long r;

	if (strncmp(path, tagdir, n) || path[n] != '/')
		return -1;
	p = path + n + 1;
	for (k = 0; k < 3; k++) {
		size_t plen = strlen(optim_prefix[k]);

		if (plen && !strncmp(p, optim_prefix[k], plen)) {
			p += plen;
			break;
		}
	}
	if (strncmp(p, "zero_pp_rank_", 13) || p[13] < '0' || p[13] > '9')
		return -1;
	r = strtoul(p + 13, &end, 10);
	if (strcmp(end, "_mp_rank_00_model_states.pt") &&
	    strcmp(end, "_mp_rank_00_optim_states.pt"))
		return -1;
	return r > 0x7fffffffUL ? -1 : (long) r;
}

/*
 * The data-parallel world the checkpoint was saved with, as far as this
 * node sees its shards: DeepSpeed names each rank's ZeRO files by its
 * rank and refuses a checkpoint of another world size only after the
 * model has loaded ("The checkpoint being loaded used a DP world size of
 * N but the current world size is M", runtime/zero/stage3.py
 * _rigid_load_state_dict, and stage_1_and_2.py alike; deepspeedai/
 * DeepSpeed issues 6441 and 7628), and every requeue repeats it. A shard
 * of a rank beyond this step's ranks: saved by a larger world (checked
 * first, smaller 0). With smaller 1 (called once this node's own files
 * are all there, on shared storage, where every rank's are seen): none
 * from some rank below the step's world size on: a smaller world, or an
 * unfinished save.
 */
static int check_world(const struct lf_listing *ls,
		       const struct lf_resume_input *in, const char *tagdir,
		       const char *tag, int smaller, struct distenv_error *err)
{
	long top = -1, r;
	size_t i;
	char where[64];

	for (i = 0; i < ls->count; i++) {
		r = shard_rank(ls->paths[i], tagdir);
		if (r < 0)
			continue;
		if (r > top)
			top = r;
	}
	snprintf(where, sizeof(where), "node %u", in->node_id);
	if (!smaller && top >= 0 && (uint32_t) top >= in->world_size)
		return distenv_error_set(
			err, where,
			"run with the node and GPU count that saved it, convert "
			"it (DeepSpeed's ds_to_universal.py, then "
			"checkpoint.load_universal), or resume from another "
			"checkpoint (--distenv-resume=PATH)",
			"cannot resume from %s: it was saved by a data-parallel "
			"world of at least %ld ranks (%s holds rank %ld's "
			"shards), and this step has %u; DeepSpeed would "
			"refuse it only after loading the model",
			in->checkpoint, top + 1, tag, top, in->world_size);
	if (smaller && top >= 0 && (uint32_t) top + 1 < in->world_size)
		return distenv_error_set(
			err, where,
			"run with the node and GPU count that saved it, or "
			"resume from another checkpoint (--distenv-resume=PATH)",
			"cannot resume from %s: %s holds the shards of ranks "
			"up to %ld only, and this step has %u ranks: it was "
			"saved by a smaller data-parallel world, or its save "
			"did not finish",
			in->checkpoint, tag, top, in->world_size);
	return 0;
}

int lf_resume_check(const struct lf_listing *ls,
		    const struct lf_resume_input *in,
		    struct lf_resume_result *res, struct distenv_error *err)
{
	struct lf_resume_result local;
	struct lf_resume_result *r = res ? res : &local;
	const char *ck = in->checkpoint;
	char tagdir[384], tag[128], latest_path[384];
	uint32_t first = in->node_id * in->gpus_per_node, rank;
	int no_latest = 0;

	memset(r, 0, sizeof(*r));
	snprintf(latest_path, sizeof(latest_path), "%s/latest", ck);
	need(ls, r, 1, "%s/trainer_state.json", ck);
	if (in->zero_stage > 0) {
		no_latest = !has(ls, latest_path);
		need(ls, r, 1, "%s", latest_path);
		resume_tag(in, tag, sizeof(tag));
		snprintf(tagdir, sizeof(tagdir), "%s/%s", ck, tag);
		need_zero_files(ls, in, tagdir, first, r);
		if (check_world(ls, in, tagdir, tag, 0, err))
			return -1;
	}
	for (rank = first;
	     rank < first + in->gpus_per_node && rank < in->world_size;
	     rank++) {
		if (in->world_size > 1)
			need(ls, r, 0, "%s/rng_state_%u.pth", ck, rank);
		else
			need(ls, r, 0, "%s/rng_state.pth", ck);
	}
	if (no_latest && in->restore_latest && in->node_id > 0)
		restore_latest(r, latest_path, tag);
	if (r->missing_required)
		return fail_missing(in, r, err);
	/* this node's files all there: on shared storage it sees every
	 * rank's, so a gap above them is the save's, not a disk's */
	if (in->zero_stage > 0 && in->shared)
		return check_world(ls, in, tagdir, tag, 1, err);
	return 0;
}
