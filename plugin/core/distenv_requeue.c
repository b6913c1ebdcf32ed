/*
 * distenv_requeue.c: sbatch's --signal, --requeue and script as sbatch
 * reads them, and the rule on the lead of a requeued or resumed job
 * (the contract and sources are in distenv_requeue.h).
 */
#include "distenv_requeue.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_option_table.h"

/* Slurm's long options that take no value, or only an attached one
 * (--name=value): src/common/slurm_opt.c, has_arg no_argument and
 * optional_argument, SchedMD/slurm 284c3b95f0. Every other long option
 * of sbatch takes one, attached or as the next word. */
static const char *const long_no_value[] = {
	"async",
	"bell",
	"bcast",
	"compress",
	"consolidate-segments",
	"contiguous",
	"debugger-test",
	"disable-status",
	"exact",
	"exclusive",
	"external",
	"external-launcher",
	"get-user-env",
	"help",
	"hold",
	"ignore-pbs",
	"immediate",
	"interactive",
	"kill-command",
	"kill-on-bad-exit",
	"label",
	"multi-prog",
	"nice",
	"no-allocate",
	"no-bell",
	"no-kill",
	"no-requeue",
	"no-shell",
	"oom-kill-step",
	"overcommit",
	"overlap",
	"oversubscribe",
	"parsable",
	"preserve-env",
	"propagate",
	"pty",
	"quiet",
	"quit-on-interrupt",
	"reboot",
	"requeue",
	"resv-ports",
	"send-libs",
	"spread-job",
	"spread-segments",
	"stepmgr",
	"test-only",
	"unbuffered",
	"usage",
	"use-min-nodes",
	"verbose",
	"version",
	"wait",
	"wait-for-children",
	"whole",
	"x11",
};

/* sbatch's short options that take a value (the same table). */
static const char short_with_value[] = "ABCDFGJLMNSTabcdeimnopqrtwx";

int distenv_signal_parse(const char *value, struct distenv_signal *sig)
{
	const char *p = value, *at;
	char *end;
	unsigned long lead = DISTENV_SIGNAL_LEAD_DEFAULT;

	sig->set = 0;
	sig->batch = 0;
	if (!value || !*value)
		return -1;
	snprintf(sig->text, sizeof(sig->text), "%s", value);
	if (strchr(p, ':')) {
		for (; *p != ':'; p++) {
			if (*p == 'B')
				sig->batch = 1;
			else if (*p != 'R')
				return -1;
		}
		p++;
	}
	at = strchr(p, '@');
	if (at == p || !*p)
		return -1;
	if (at) {
		if (!isdigit((unsigned char) at[1]))
			return -1;
		lead = strtoul(at + 1, &end, 10);
		if (*end || lead > 65535)
			return -1;
	}
	sig->lead = (unsigned) lead;
	sig->set = 1;
	return 0;
}

static int in_list(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(long_no_value) / sizeof(long_no_value[0]); i++)
		if (strlen(long_no_value[i]) == len &&
		    !strncmp(long_no_value[i], name, len))
			return 1;
	return 0;
}

/* Whether --name (len bytes) takes the next word as its value. */
static int long_takes_next(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const char *p = distenv_option_table[i].plugin_name;

		if (p && strlen(p) == len && !strncmp(p, name, len))
			return distenv_option_table[i].has_arg == 1;
	}
	return !in_list(name, len);
}

static void set_signal(struct distenv_sbatch_job *job, const char *value,
		       const char *from)
{
	struct distenv_signal sig;

	if (distenv_signal_parse(value, &sig))
		return;
	snprintf(sig.from, sizeof(sig.from), "%s", from);
	job->signal = sig;
}

/* One long option, "--" already skipped; value is the next word or
 * NULL. Returns the words used up (1 or 2). */
static int scan_long(const char *opt, const char *next, const char *from,
		     struct distenv_sbatch_job *job)
{
	const char *eq = strchr(opt, '=');
	size_t len = eq ? (size_t) (eq - opt) : strlen(opt);
	int used = 1;
	const char *value = eq ? eq + 1 : NULL;

	if (!eq && long_takes_next(opt, len)) {
		value = next;
		used = next ? 2 : 1;
	}
	if (len == 6 && !strncmp(opt, "signal", 6))
		set_signal(job, value, from);
	else if (len == 7 && !strncmp(opt, "requeue", 7))
		job->requeue = 1;
	else if (len == 10 && !strncmp(opt, "no-requeue", 10))
		job->requeue = 0;
	else if (len == 4 && !strncmp(opt, "wrap", 4))
		job->wrap = 1;
	return used;
}

/* One cluster of short options ("-N2", "-vv", "-o FILE"), "-" already
 * skipped. Returns the words used up. */
static int scan_short(const char *opt, const char *next)
{
	for (; *opt; opt++)
		if (strchr(short_with_value, *opt))
			return opt[1] ? 1 : (next ? 2 : 1);
	return 1;
}

/* Options of words[0..n) into job; the index of the first word that is
 * not an option (n when none). */
static int scan_words(int n, const char *const *words, const char *from,
		      struct distenv_sbatch_job *job)
{
	int i = 0;

	while (i < n) {
		const char *w = words[i];
		const char *next = i + 1 < n ? words[i + 1] : NULL;

		if (!strcmp(w, "--"))
			return i + 1;
		if (w[0] != '-' || !w[1])
			return i;
		i += w[1] == '-' ? scan_long(w + 2, next, from, job) :
				   scan_short(w + 1, next);
	}
	return n;
}

static void job_reset(struct distenv_sbatch_job *job)
{
	memset(job, 0, sizeof(*job));
	job->requeue = -1;
}

void distenv_sbatch_scan_argv(int argc, const char *const *argv,
			      struct distenv_sbatch_job *job)
{
	int first;

	job_reset(job);
	if (argc < 1)
		return;
	first = 1 +
		scan_words(argc - 1, argv + 1, "the sbatch command line", job);
	if (!job->wrap && first < argc)
		job->script_arg = first;
}

/* The words of one #SBATCH line (after the magic word) into job, up to
 * a word that starts a comment. Quotes around a word are dropped. */
static void scan_line(const char *rest, const char *from,
		      struct distenv_sbatch_job *job)
{
	char buf[1024], *words[64], *save = NULL, *w;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", rest);
	for (w = strtok_r(buf, " \t\r", &save); w && n < 64;
	     w = strtok_r(NULL, " \t\r", &save)) {
		size_t len = strlen(w);

		if (w[0] == '#')
			break;
		if (len >= 2 && (w[0] == '"' || w[0] == '\'') &&
		    w[len - 1] == w[0]) {
			w[len - 1] = '\0';
			w++;
		}
		words[n++] = w;
	}
	scan_words(n, (const char *const *) words, from, job);
}

/* The #SBATCH lines of text up to its first command (sbatch's
 * _opt_batch_script, src/sbatch/opt.c). */
static void scan_script(const char *name, const char *text,
			struct distenv_sbatch_job *job)
{
	const char *line = text;
	unsigned lineno = 0;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t) (eol - line) : strlen(line);
		char one[1024], from[160];
		const char *p;

		lineno++;
		snprintf(one, sizeof(one), "%.*s", (int) len, line);
		line = eol ? eol + 1 : NULL;
		p = one;
		if (!strncmp(p, "#SBATCH", 7) || !strncmp(p, "#SLURM", 6)) {
			snprintf(from, sizeof(from), "%s line %u", name,
				 lineno);
			scan_line(p + (p[2] == 'B' ? 7 : 6), from, job);
			continue;
		}
		while (isspace((unsigned char) *p))
			p++;
		if (*p && *p != '#')
			return;
	}
}

void distenv_sbatch_layers(const struct distenv_sbatch_job *cmd,
			   const char *name, const char *text,
			   const char *env_signal, const char *env_requeue,
			   const char *env_no_requeue,
			   struct distenv_sbatch_job *job)
{
	job_reset(job);
	if (text)
		scan_script(name, text, job);
	if (env_signal)
		set_signal(job, env_signal, "SBATCH_SIGNAL");
	if (env_no_requeue)
		job->requeue = 0;
	if (env_requeue)
		job->requeue = 1;
	if (cmd->signal.set)
		job->signal = cmd->signal;
	if (cmd->requeue >= 0)
		job->requeue = cmd->requeue;
	job->wrap = cmd->wrap;
	job->script_arg = cmd->script_arg;
	job->unknown = !text && !job->wrap && !job->signal.set;
}

int distenv_requeue_check(const struct distenv_sbatch_job *job,
			  const char *resume_by, struct distenv_error *finding)
{
	const struct distenv_signal *s = &job->signal;
	const char *asked = resume_by ? resume_by : "--requeue";
	char where[256], fix[160];

	if ((!resume_by && job->requeue != 1) || job->unknown)
		return 0;
	snprintf(where, sizeof(where), "--signal=%s (%s)", s->text, s->from);
	if (!s->set) {
		distenv_error_set(
			finding, asked,
			"add --signal=B:USR1@900 (a lead longer than one save) "
			"and a USR1 trap in the script that lets a save finish "
			"and runs `scontrol requeue` (templates/README.md, "
			"\"Requeue and resume\")",
			"no --signal: the batch script gets no warning before "
			"the time limit, whose SIGTERM ends the job without a "
			"requeue");
	} else if (!s->batch) {
		snprintf(fix, sizeof(fix), "give it as --signal=B:%s",
			 strchr(s->text, ':') ? strchr(s->text, ':') + 1 :
						s->text);
		distenv_error_set(finding, where, fix,
				  "without \"B:\" the signal goes to the job's "
				  "steps, not to the batch script, so the "
				  "script's trap never runs (%s)",
				  asked);
	} else if (s->lead < DISTENV_SAVE_LEAD_MIN) {
		distenv_error_set(
			finding, where,
			"give a lead of at least one save (the templates ask "
			"for 900 s)",
			"the warning comes %u s before the time limit, less "
			"than a save needs (at least %u s: a 7B model's ZeRO "
			"checkpoint is about 100 GB) (%s)",
			s->lead, DISTENV_SAVE_LEAD_MIN, asked);
	} else {
		return 0;
	}
	return 1;
}
