/*
 * distenv_launch_int.h: the words of a command line, for
 * distenv_launch_line.c (distenv_launch_line.h says which).
 *
 * distenv_launch_words calls fn once per word of argv, in order, and
 * with a NULL word where a shell command ends (`;`, `&`, `|`, `&&`,
 * `||`, `(`, `)`, a newline, and around a -c script's words). An
 * argument that follows a shell's -c option (a word whose name is sh,
 * bash, dash, ksh or zsh, then `-c`, `-lc`, `-ec`, ...) is split as
 * the shell would split it: blanks, single and double quotes,
 * backslashes, comments; a word holding an expansion ($, `) has
 * literal 0 and keeps the expansion's text ("$(hostname)"). Scripts
 * inside scripts are split too, to a depth of 3. Words longer than
 * DISTENV_LAUNCH_WORD - 1 bytes are cut.
 */
#ifndef DISTENV_LAUNCH_INT_H
#define DISTENV_LAUNCH_INT_H

#include <stddef.h>

#define DISTENV_LAUNCH_WORD 512

struct distenv_launch_word {
	char text[DISTENV_LAUNCH_WORD];
	int literal; /* no expansion the task's shell would perform */
};

/* fn returns nonzero to stop; distenv_launch_words then returns it. */
typedef int (*distenv_launch_word_fn)(const struct distenv_launch_word *w,
				      void *ctx);

int distenv_launch_words(int argc, char *const *argv, distenv_launch_word_fn fn,
			 void *ctx);

/* The host of a host[:port] or [v6]:port value, into buf. */
void distenv_launch_host_part(const char *value, char *buf, size_t len);

/* Whether two host names or addresses are the same by text: equal
 * ignoring case, or, both names, the same up to the first dot
 * ("n1" and "n1.cluster"). b may be NULL (never the same). */
int distenv_launch_same_host(const char *a, const char *b);

/* localhost, 127.0.0.0/8, ::1 */
int distenv_launch_loopback(const char *host);

/* An expansion that the task's shell turns into its own node's name or
 * address: $(hostname ...), `hostname ...`, $HOSTNAME, ${HOSTNAME},
 * $SLURMD_NODENAME, ${SLURMD_NODENAME}. */
int distenv_launch_self_expansion(const char *host);

/* The word's last path component ("/usr/bin/torchrun": "torchrun"). */
const char *distenv_launch_base(const char *word);

#endif
