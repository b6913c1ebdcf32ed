/* Unit tests: sbatch's --signal, --requeue and script as sbatch reads
 * them, and the lead a requeued or resumed job needs
 * (distenv_requeue.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_requeue.h"

#define N(a) ((int) (sizeof(a) / sizeof((a)[0])))

static void signal_values(void **state)
{
	struct distenv_signal s;

	(void) state;
	assert_int_equal(distenv_signal_parse("B:USR1@300", &s), 0);
	assert_true(s.set);
	assert_true(s.batch);
	assert_int_equal(s.lead, 300);
	assert_int_equal(distenv_signal_parse("USR1", &s), 0);
	assert_false(s.batch);
	assert_int_equal(s.lead, DISTENV_SIGNAL_LEAD_DEFAULT);
	assert_int_equal(distenv_signal_parse("RB:10@900", &s), 0);
	assert_true(s.batch);
	assert_int_equal(s.lead, 900);
	assert_int_equal(distenv_signal_parse("R:USR2@0", &s), 0);
	assert_false(s.batch);
	assert_int_equal(s.lead, 0);
	/* what sbatch refuses is no signal */
	assert_int_equal(distenv_signal_parse("X:USR1", &s), -1);
	assert_false(s.set);
	assert_int_equal(distenv_signal_parse("B:USR1@", &s), -1);
	assert_int_equal(distenv_signal_parse("B:USR1@70000", &s), -1);
	assert_int_equal(distenv_signal_parse("B:@30", &s), -1);
	assert_int_equal(distenv_signal_parse("", &s), -1);
}

/* The script is the first word after the options; values of options
 * that take one are not it. */
static void argv_script(void **state)
{
	const char *a[] = {"sbatch", "-N", "2", "-o", "out", "--time", "10",
			   "--distenv", "--distenv-resume", "auto",
			   "--requeue", "job.sh", "--signal=B:USR1@5"};
	const char *b[] = {"sbatch", "-N2", "-vv", "--signal", "B:USR1@300",
			   "--", "job.sh"};
	const char *c[] = {"sbatch", "--wrap", "sleep 1", "--no-requeue"};
	const char *d[] = {"sbatch", "--distenv-show", "--signal=USR1@600"};
	struct distenv_sbatch_job j;

	(void) state;
	distenv_sbatch_scan_argv(N(a), a, &j);
	assert_int_equal(j.script_arg, 11);
	assert_int_equal(j.requeue, 1);
	assert_false(j.signal.set); /* after the script: the script's own */
	distenv_sbatch_scan_argv(N(b), b, &j);
	assert_int_equal(j.script_arg, 6);
	assert_true(j.signal.batch);
	assert_int_equal(j.signal.lead, 300);
	assert_string_equal(j.signal.from, "the sbatch command line");
	assert_int_equal(j.requeue, -1);
	distenv_sbatch_scan_argv(N(c), c, &j);
	assert_true(j.wrap);
	assert_int_equal(j.script_arg, 0);
	assert_int_equal(j.requeue, 0);
	distenv_sbatch_scan_argv(N(d), d, &j);
	assert_int_equal(j.script_arg, 0); /* stdin */
	assert_int_equal(j.signal.lead, 600);
}

static const char script[] = "#!/bin/bash\n"
			     "#SBATCH -N 2 --signal=B:USR1@900 # lead\n"
			     "\n"
			     "# a comment\n"
			     "#SBATCH --requeue\n"
			     "srun true\n"
			     "#SBATCH --signal=USR1@10\n";

/* Script, then environment, then command line, the last one wins; the
 * script ends at its first command. */
static void layers(void **state)
{
	const char *argv[] = {"sbatch", "job.sh"};
	const char *argv_sig[] = {"sbatch", "--signal=B:USR2@200", "job.sh"};
	struct distenv_sbatch_job cmd, j;

	(void) state;
	distenv_sbatch_scan_argv(N(argv), argv, &cmd);
	distenv_sbatch_layers(&cmd, "job.sh", script, NULL, NULL, NULL, &j);
	assert_true(j.signal.batch);
	assert_int_equal(j.signal.lead, 900);
	assert_string_equal(j.signal.from, "job.sh line 2");
	assert_int_equal(j.requeue, 1);
	assert_false(j.unknown);
	distenv_sbatch_layers(&cmd, "job.sh", script, "USR1@30", NULL, "1",
			      &j);
	assert_false(j.signal.batch);
	assert_string_equal(j.signal.from, "SBATCH_SIGNAL");
	assert_int_equal(j.requeue, 0);
	distenv_sbatch_scan_argv(N(argv_sig), argv_sig, &cmd);
	distenv_sbatch_layers(&cmd, "job.sh", script, "USR1@30", NULL, NULL,
			      &j);
	assert_int_equal(j.signal.lead, 200);
	assert_string_equal(j.signal.from, "the sbatch command line");
	/* a script that cannot be read: unknown, unless a signal is known */
	distenv_sbatch_scan_argv(N(argv), argv, &cmd);
	distenv_sbatch_layers(&cmd, "job.sh", NULL, NULL, NULL, NULL, &j);
	assert_true(j.unknown);
	distenv_sbatch_layers(&cmd, "job.sh", NULL, "B:USR1@300", NULL, NULL,
			      &j);
	assert_false(j.unknown);
}

static struct distenv_sbatch_job with_signal(const char *value, int requeue)
{
	struct distenv_sbatch_job j;

	memset(&j, 0, sizeof(j));
	j.requeue = requeue;
	if (value) {
		assert_int_equal(distenv_signal_parse(value, &j.signal), 0);
		snprintf(j.signal.from, sizeof(j.signal.from), "job.sh line 2");
	}
	return j;
}

static void rule(void **state)
{
	struct distenv_sbatch_job j;
	struct distenv_error e;

	(void) state;
	/* nothing asked: nothing said, whatever the signal */
	j = with_signal(NULL, -1);
	assert_int_equal(distenv_requeue_check(&j, NULL, &e), 0);
	j = with_signal(NULL, 0);
	assert_int_equal(distenv_requeue_check(&j, NULL, &e), 0);
	/* --distenv-resume without --signal */
	j = with_signal(NULL, -1);
	memset(&e, 0, sizeof(e));
	assert_int_equal(
		distenv_requeue_check(&j, "--distenv-resume=auto", &e), 1);
	assert_string_equal(e.where, "--distenv-resume=auto");
	assert_non_null(strstr(e.what, "no --signal"));
	assert_non_null(strstr(e.fix, "--signal=B:USR1@900"));
	/* --requeue, a signal to the steps only */
	j = with_signal("USR1@300", 1);
	assert_int_equal(distenv_requeue_check(&j, NULL, &e), 1);
	assert_string_equal(e.where, "--signal=USR1@300 (job.sh line 2)");
	assert_non_null(strstr(e.what, "without \"B:\""));
	assert_string_equal(e.fix, "give it as --signal=B:USR1@300");
	/* a lead shorter than a save; the default lead is one */
	j = with_signal("B:USR1@30", 1);
	assert_int_equal(distenv_requeue_check(&j, NULL, &e), 1);
	assert_non_null(strstr(e.what, "30 s before the time limit"));
	j = with_signal("B:USR1", 1);
	assert_int_equal(distenv_requeue_check(&j, NULL, &e), 1);
	assert_non_null(strstr(e.what, "60 s before"));
	/* in order */
	j = with_signal("B:USR1@120", 1);
	assert_int_equal(distenv_requeue_check(&j, NULL, &e), 0);
	j = with_signal("B:USR1@300", -1);
	assert_int_equal(
		distenv_requeue_check(&j, "--distenv-resume=auto", &e), 0);
	/* the script unread and no signal seen: no finding */
	j = with_signal(NULL, 1);
	j.unknown = 1;
	assert_int_equal(distenv_requeue_check(&j, NULL, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(signal_values),
		cmocka_unit_test(argv_script),
		cmocka_unit_test(layers),
		cmocka_unit_test(rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
