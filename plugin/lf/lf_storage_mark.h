/*
 * lf_storage_mark.h: tell node-local from shared output_dir storage by
 * looking, not guessing. A step run with --distenv-mark-storage (one task
 * per node; the templates run it before training) writes one small file
 * per node, OUTPUT_DIR/.distenv/storage/NODE, naming the job and its
 * start (SLURM_RESTART_COUNT). A later step of the same start reads, on
 * each node, its own mark and one other node's: node index 0 of the step
 * reads index 1's, every other node reads index 0's. Seeing the other
 * node's mark of this start means the two share output_dir; seeing only
 * its own means this node has a storage of its own there.
 *
 * Why two steps and one other node: the marks are written in one step and
 * read in the next, so no node looks up a name before it exists (an NFS
 * client caches a failed lookup for up to acdirmax, nfs(5)), and every
 * mark is read by open(2), which NFS's close-to-open consistency makes
 * see the writer's close (nfs(5), "Data and metadata coherence"). One
 * other node per node keeps a 1,000-node step at one lookup per node.
 * What a node needs is whether node 0's saves reach it, which decides
 * save_on_each_node (docs/contracts.md 2); node 0 itself reads index 1's
 * mark so that its verdict (and message) agrees with the others'.
 *
 * This file is pure: names, texts and verdicts; lf_sys.h reads and writes.
 */
#ifndef DISTENV_LF_STORAGE_MARK_H
#define DISTENV_LF_STORAGE_MARK_H

#include <stddef.h>
#include <stdint.h>

#include "lf_fstype.h"

/* The marks' directory below output_dir. */
#define LF_MARK_SUBDIR ".distenv/storage"

/* A mark's text: one line, at most this many bytes. */
#define LF_MARK_TEXT_MAX 512

/*
 * The text of node's mark for job_id's start restart (0 the first
 * start): "distenv storage mark: job J start R node NODE\n". Returns
 * its length, or -1 when it does not fit in len or node is empty.
 */
int lf_mark_text(uint32_t job_id, uint32_t restart, const char *node, char *buf,
		 size_t len);

/*
 * Whether text (NULL: no mark was found) is node's mark of job_id's start
 * restart, as lf_mark_text writes it. A mark of another job or start
 * (left by an earlier run in the same output_dir) does not match.
 */
int lf_mark_matches(const char *text, uint32_t job_id, uint32_t restart,
		    const char *node);

/*
 * Which node's mark a node reads: index 1 for node index 0, index 0 for
 * every other node. nnodes < 2: none (-1).
 */
int lf_mark_partner_index(uint32_t node_id, uint32_t nnodes);

/*
 * The verdict from the two marks as found (NULL: missing or unreadable):
 * own_ok and partner_ok as lf_mark_matches gives them.
 *   own mark of this start missing: LF_STORAGE_UNKNOWN (no mark step ran
 *     here for this start; the file system type decides, as before);
 *   the other node's found: LF_STORAGE_SHARED;
 *   only the own: LF_STORAGE_LOCAL.
 */
enum lf_storage lf_mark_verdict(int own_ok, int partner_ok);

#endif
