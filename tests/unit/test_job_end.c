/* Unit tests: DISTENV_JOB_END, the job's end by its time limit
 * (distenv_derive_job_end.c), from Slurm's variable or slurmctld's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_derive.h"
#include "derive_world.h"
#include "net_fixture.h"

/* Node 2 of a 2-node torchrun step whose environment holds a and b
 * ("NAME=value", NULL: none), derived; the derivation must succeed. */
static struct world *derived(const char *a, const char *b)
{
	static struct world w;

	distenv_vars_free(&w.vars);
	memset(&w, 0, sizeof(w));
	distenv_site_defaults(&w.site);
	w.req.mode = DISTENV_MODE_TORCHRUN;
	w.env[0] = a;
	w.env[1] = a ? b : NULL;
	fx_worker_step(&w.step, 77, 3, "n2", "n1", w.env);
	fx_cluster_node(&w.fx, 2, "n1");
	fx_addr(&w.fx, "10.77.0.1", "eth0");
	assert_int_equal(distenv_derive(&w.site, &w.req, &w.step, &w.fx.net,
					&w.vars, &w.err),
			 0);
	return &w;
}

static const struct distenv_var *job_end(struct world *w)
{
	return distenv_vars_find(&w->vars, "DISTENV_JOB_END");
}

/* Slurm >= 23.02: SLURM_JOB_END_TIME, exported with the date in UTC. */
static void from_slurm_variable(void **state)
{
	struct world *w = derived("SLURM_JOB_END_TIME=1796400000",
				  "SLURM_JOB_START_TIME=1796396400");
	const struct distenv_var *v = job_end(w);

	(void) state;
	assert_non_null(v);
	assert_string_equal(v->value, "1796400000");
	assert_int_equal(v->action, DISTENV_ACTION_SET);
	assert_non_null(strstr(v->reason, "SLURM_JOB_END_TIME: the time "
					  "limit ends the job at "
					  "2026-12-04T16:00:00Z"));
	assert_non_null(strstr(v->reason, "a later change of the limit"));
	/* before DISTENV_SET, which lists it */
	assert_string_equal(w->vars.items[w->vars.count - 1].name,
			    "DISTENV_SET");
	assert_non_null(strstr(w->vars.items[w->vars.count - 1].value,
			       "DISTENV_JOB_END:"));
}

/* slurmctld gives a job without a time limit an end a year after its
 * start: no end to export. */
static void no_time_limit(void **state)
{
	struct world *w = derived("SLURM_JOB_END_TIME=1827932400",
				  "SLURM_JOB_START_TIME=1796396400");

	(void) state;
	assert_null(job_end(w));
	w = derived("SLURM_JOB_END_TIME=1827932399",
		    "SLURM_JOB_START_TIME=1796396400");
	assert_non_null(job_end(w));
}

/* Unknown or malformed: nothing, and the step still runs. */
static void unknown_or_malformed(void **state)
{
	(void) state;
	assert_null(job_end(derived(NULL, NULL)));
	assert_null(job_end(derived("SLURM_JOB_END_TIME=", NULL)));
	assert_null(job_end(derived("SLURM_JOB_END_TIME=12x", NULL)));
	assert_null(job_end(derived("SLURM_JOB_END_TIME=-5", NULL)));
	assert_null(job_end(derived("SLURM_JOB_END_TIME=0", NULL)));
}

/* Slurm < 23.02: slurmctld's value, given by the sys layer, says so;
 * Slurm's variable wins where both exist. */
static void from_slurmctld(void **state)
{
	struct world *w;
	long long end = 0;
	const char *source = NULL;

	(void) state;
	w = derived(NULL, NULL);
	w->step.job_end = 1796400000;
	assert_int_equal(distenv_job_end(&w->step, &end, &source), 1);
	assert_true(end == 1796400000);
	assert_non_null(strstr(source, "slurmctld"));
	w = derived("SLURM_JOB_END_TIME=1796400600", NULL);
	w->step.job_end = 1796400000;
	assert_int_equal(distenv_job_end(&w->step, &end, &source), 1);
	assert_true(end == 1796400600);
	assert_string_equal(source, "SLURM_JOB_END_TIME");
}

/* A value the user exported is kept, as every derived variable. */
static void user_value_kept(void **state)
{
	struct world *w = derived("SLURM_JOB_END_TIME=1796400000",
				  "DISTENV_JOB_END=1796399000");
	const struct distenv_var *v = job_end(w);

	(void) state;
	assert_non_null(v);
	assert_string_equal(v->value, "1796399000");
	assert_int_equal(v->action, DISTENV_ACTION_KEPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_slurm_variable),
		cmocka_unit_test(no_time_limit),
		cmocka_unit_test(unknown_or_malformed),
		cmocka_unit_test(from_slurmctld),
		cmocka_unit_test(user_value_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
