/* lf_storage_mark.c: storage marks (contracts in lf_storage_mark.h). */
#include "lf_storage_mark.h"

#include <stdio.h>
#include <string.h>

#define MARK_PREFIX "distenv storage mark: "

int lf_mark_text(uint32_t job_id, uint32_t restart, const char *node, char *buf,
		 size_t len)
{
	int n;

	if (!node || !node[0] || strpbrk(node, " \n/"))
		return -1;
	n = snprintf(buf, len, MARK_PREFIX "job %u start %u node %s\n",
		     (unsigned) job_id, (unsigned) restart, node);
	return n < 0 || (size_t) n >= len ? -1 : n;
}

int lf_mark_matches(const char *text, uint32_t job_id, uint32_t restart,
		    const char *node)
{
	char want[LF_MARK_TEXT_MAX];

	return text &&
	       lf_mark_text(job_id, restart, node, want, sizeof(want)) > 0 &&
	       !strcmp(text, want);
}

int lf_mark_partner_index(uint32_t node_id, uint32_t nnodes)
{
	if (nnodes < 2)
		return -1;
	return node_id == 0 ? 1 : 0;
}

enum lf_storage lf_mark_verdict(int own_ok, int partner_ok)
{
	if (!own_ok)
		return LF_STORAGE_UNKNOWN;
	return partner_ok ? LF_STORAGE_SHARED : LF_STORAGE_LOCAL;
}
