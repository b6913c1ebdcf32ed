/* distenv_sys_hostlist.c: the first host of a Slurm node list. */
#include "distenv_sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

/*
 * Whether head (the first element of a node list) has the shape of a
 * Slurm host name or range expression: outside brackets letters, digits,
 * '-', '.', '_'; inside non-nested brackets digits, ',' and '-'; numbers
 * of at most 10 digits. libslurm's hostlist parser, given other bytes
 * inside brackets, spent seconds logging errors (tests/fuzz/fuzz_nodelist
 * found "n[1-?33...]"), and a task launch must not stall on a malformed
 * variable.
 */
static int head_is_plausible(const char *head, size_t n)
{
	size_t i, digits = 0;
	int in = 0;

	for (i = 0; i < n; i++) {
		char c = head[i];

		digits = (c >= '0' && c <= '9') ? digits + 1 : 0;
		if (digits > 10)
			return 0;
		if (c == '[') {
			if (in)
				return 0;
			in = 1;
		} else if (c == ']') {
			if (!in)
				return 0;
			in = 0;
		} else if (in) {
			if (!(c >= '0' && c <= '9') && c != ',' && c != '-')
				return 0;
		} else if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
			   !(c >= '0' && c <= '9') && c != '-' && c != '.' &&
			   c != '_') {
			return 0;
		}
	}
	return !in;
}

/* Most name prefixes a first element may stand for (below). */
#define DISTENV_HOSTLIST_MAX_PREFIXES 4096ULL

/* Names in one bracket group's body ("1-2,7" is 3), at least 1. */
static unsigned long long group_size(const char *body, size_t n)
{
	unsigned long long size = 0, lo = 0, hi = 0;
	int in_hi = 0;
	size_t i;

	for (i = 0; i <= n; i++) {
		char c = i < n ? body[i] : ',';

		if (c >= '0' && c <= '9') {
			if (in_hi)
				hi = hi * 10 + (unsigned) (c - '0');
			else
				lo = lo * 10 + (unsigned) (c - '0');
		} else if (c == '-') {
			in_hi = 1;
			hi = 0;
		} else { /* ',' or the end */
			size += in_hi && hi >= lo ? hi - lo + 1 : 1;
			lo = hi = 0;
			in_hi = 0;
		}
	}
	return size ? size : 1;
}

/*
 * How many name prefixes libslurm's hostlist parser builds for head
 * (already plausible): a name with several bracket groups,
 * "rack[1-2]-node[1-4]", is their product, and the parser makes one
 * range per combination of all groups but the last. 20 groups of [1-2]
 * took it past libFuzzer's 10 s (tests/fuzz/fuzz_nodelist). Slurm itself
 * writes node lists with one bracket group per name, so a large count is
 * refused before libslurm sees it. Saturates at the limit + 1.
 */
static unsigned long long prefix_count(const char *head, size_t n)
{
	unsigned long long count = 1, last = 1;
	size_t i, open = 0;

	for (i = 0; i < n; i++) {
		if (head[i] == '[') {
			open = i + 1;
		} else if (head[i] == ']') {
			count *= last;
			if (count > DISTENV_HOSTLIST_MAX_PREFIXES)
				return DISTENV_HOSTLIST_MAX_PREFIXES + 1;
			last = group_size(head + open, i - open);
		}
	}
	return count;
}

/* The idx-th name of one element of a node list (head, n bytes), or
 * NULL with *count set to the element's number of names. */
static char *element_name(const char *head, size_t n, uint32_t idx,
			  uint32_t *count, int *bad)
{
	/* struct hostlist *, not hostlist_t: 23.11 changed the typedef from
	 * a pointer to a struct (docs/contracts.md 5). */
	struct hostlist *hl;
	char *copy = strndup(head, n), *name = NULL;
	int c;

	*count = 0;
	*bad = 0;
	if (!copy)
		return NULL;
	hl = slurm_hostlist_create(copy);
	free(copy);
	if (!hl) {
		*bad = 1;
		return NULL;
	}
	c = slurm_hostlist_count(hl);
	*count = c > 0 ? (uint32_t) c : 0;
	if (idx < *count) {
		uint32_t i;

		for (i = 0; i <= idx; i++) {
			free(name);
			name = slurm_hostlist_shift(hl);
		}
	}
	slurm_hostlist_destroy(hl);
	return name;
}

int distenv_nth_host(const char *nodelist, uint32_t idx, const char *where,
		     char *buf, size_t len, struct distenv_error *err)
{
	const char *head;
	char *name = NULL;
	size_t i;
	int depth = 0, n, bad = 0;
	uint32_t count, asked = idx;
	char shown[72];

	if (!nodelist || !nodelist[0])
		return distenv_error_set(err, where,
					 "run inside a Slurm job or step",
					 "no node list");
	/* One element ("a[1-2]" of "a[1-2],b[01-03]") at a time goes to
	 * hostlist, and only as far as idx: a list of 10,000 names that do
	 * not fold into ranges would otherwise be parsed whole for every
	 * task. */
	for (head = nodelist; *head && !name;) {
		for (i = 0; head[i]; i++) {
			if (head[i] == '[')
				depth++;
			else if (head[i] == ']')
				depth--;
			else if (depth == 0 &&
				 (head[i] == ',' || head[i] == ' '))
				break;
		}
		if (!head_is_plausible(head, i))
			return distenv_error_set(
				err, where, NULL,
				"'%s' is not a Slurm node list",
				distenv_printable(nodelist, shown,
						  sizeof(shown)));
		if (prefix_count(head, i) > DISTENV_HOSTLIST_MAX_PREFIXES)
			return distenv_error_set(
				err, where,
				"Slurm writes one bracket group per name (n[1-4]); pass the list Slurm set",
				"'%s' stands for more than %llu name prefixes (several bracket groups in one name)",
				distenv_printable(nodelist, shown,
						  sizeof(shown)),
				DISTENV_HOSTLIST_MAX_PREFIXES);
		name = element_name(head, i, idx, &count, &bad);
		if (bad)
			return distenv_error_set(
				err, where, NULL,
				"'%s' is not a Slurm node list",
				distenv_printable(nodelist, shown,
						  sizeof(shown)));
		if (!name && count == 0)
			break;
		if (!name) /* idx >= count: on to the next element */
			idx -= count;
		head += i;
		while (*head == ',' || *head == ' ')
			head++;
	}
	if (!name || !name[0]) {
		free(name);
		return distenv_error_set(err, where, NULL,
					 "'%s' has no name at index %u",
					 distenv_printable(nodelist, shown,
							   sizeof(shown)),
					 (unsigned) asked);
	}
	n = snprintf(buf, len, "%s", name);
	free(name);
	if (n < 0 || (size_t) n >= len)
		return distenv_error_set(err, where, NULL,
					 "host name is too long");
	return 0;
}

int distenv_first_host(const char *nodelist, const char *where, char *buf,
		       size_t len, struct distenv_error *err)
{
	return distenv_nth_host(nodelist, 0, where, buf, len, err);
}
