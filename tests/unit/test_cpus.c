/* Unit tests: the CPU budget of a task and OMP_NUM_THREADS
 * (distenv_cpus.h, distenv_derive_cpus.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_cpus.h"
#include "distenv_derive.h"
#include "derive_world.h"
#include "net_fixture.h"

/* The CPUs the job holds on a node, from SLURM_JOB_CPUS_PER_NODE. */
static void job_cpus_on_node(void **state)
{
	const char *uniform[] = { "SLURM_JOB_CPUS_PER_NODE=4(x2)", NULL };
	const char *mixed[] = { "SLURM_JOB_CPUS_PER_NODE=8,4",
				"SLURM_JOB_NUM_NODES=2", NULL };
	const char *bad[] = { "SLURM_JOB_CPUS_PER_NODE=4(x", NULL };
	const char *none[] = { NULL };

	(void) state;
	assert_int_equal(distenv_job_cpus_on_node(uniform, 1, 2), 4);
	assert_int_equal(distenv_job_cpus_on_node(uniform, 0, 1), 4);
	assert_int_equal(distenv_job_cpus_on_node(mixed, 0, 2), 8);
	assert_int_equal(distenv_job_cpus_on_node(mixed, 1, 2), 4);
	/* a step on some of the job's nodes: its index is not the job's */
	assert_int_equal(distenv_job_cpus_on_node(mixed, 0, 1), 0);
	assert_int_equal(distenv_job_cpus_on_node(bad, 0, 1), 0);
	assert_int_equal(distenv_job_cpus_on_node(none, 0, 1), 0);
}

static struct distenv_cpu_view view(uint32_t cpus, uint32_t procs,
				    uint32_t job_cpus)
{
	struct distenv_cpu_view v = { 0 };

	v.task_cpus = cpus;
	v.task_list = "0";
	v.procs = procs;
	v.procs_from = "NPROC_PER_NODE=2";
	v.job_cpus = job_cpus;
	v.local_tasks = 1;
	v.node = "n1";
	return v;
}

/* Fewer CPUs than processes: a finding with the cause and the fix. */
static void fewer_cpus_than_processes(void **state)
{
	const char *env[] = { "SLURM_CPU_BIND=quiet,map_cpu:0",
			      "SLURM_CPUS_PER_TASK=1", NULL };
	struct distenv_cpu_view v = view(1, 2, 2);
	struct distenv_error f;

	(void) state;
	distenv_error_clear(&f);
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 1);
	assert_string_equal(f.where, "node n1: CPUs of the task");
	assert_non_null(strstr(f.what, "the task may run on 1 CPU (0) but "
				       "starts 2 processes "
				       "(NPROC_PER_NODE=2)"));
	assert_non_null(strstr(f.what, "SLURM_CPU_BIND=quiet,map_cpu:0 "
				       "binds it"));
	assert_non_null(strstr(f.what, "SLURM_CPUS_PER_TASK=1 (srun -c, or "
				       "left by another job's step)"));
	assert_non_null(strstr(f.fix, "srun -c N"));
	assert_non_null(strstr(f.fix, "--cpu-bind=none"));
	assert_non_null(strstr(f.fix, "unset SLURM_CPU_BIND"));
}

/* Neither -c nor a binding in the environment: srun's default of 1 CPU
 * per task, and 22.05 to 23.02 not passing sbatch's -c on. */
static void default_one_cpu(void **state)
{
	const char *env[] = { NULL };
	const char *tres[] = { "SLURM_TRES_PER_TASK=cpu=1", NULL };
	struct distenv_cpu_view v = view(1, 4, 0);
	struct distenv_error f;

	(void) state;
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 1);
	assert_non_null(strstr(f.what, "no -c: srun counts 1 CPU per task, and "
				       "srun of Slurm 22.05 to 23.02 does "
				       "not take sbatch's -c"));
	assert_null(strstr(f.what, "SLURM_CPU_BIND="));
	assert_int_equal(distenv_cpu_budget_check(&v, tres, &f), 1);
	assert_non_null(strstr(f.what, "SLURM_TRES_PER_TASK=cpu=1"));
}

/* A per-task count above the task's CPUs does not explain them: the
 * binding is named alone, or, without one, what the environment cannot
 * show. */
static void count_that_does_not_explain(void **state)
{
	const char *bound[] = { "SLURM_CPU_BIND=quiet,mask_cpu:1",
				"SLURM_CPUS_PER_TASK=2", NULL };
	const char *unbound[] = { "SLURM_CPUS_PER_TASK=2", NULL };
	struct distenv_cpu_view v = view(1, 2, 2);
	struct distenv_error f;

	(void) state;
	assert_int_equal(distenv_cpu_budget_check(&v, bound, &f), 1);
	assert_non_null(strstr(f.what, "SLURM_CPU_BIND=quiet,mask_cpu:1"));
	assert_null(strstr(f.what, "SLURM_CPUS_PER_TASK=2"));
	assert_null(strstr(f.what, "no -c"));
	assert_int_equal(distenv_cpu_budget_check(&v, unbound, &f), 1);
	assert_non_null(strstr(f.what, "cause: not in the task's "
				       "environment"));
}

/* Under half of the task's share of the job's CPUs on the node. */
static void under_half_of_share(void **state)
{
	const char *env[] = { NULL };
	struct distenv_cpu_view v = view(1, 1, 8);
	struct distenv_error f;

	(void) state;
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 1);
	assert_non_null(strstr(f.what, "under half of the 8 the job holds "
				       "here for each of the step's 1 task"));
	/* 4 tasks on the node share the 8: 2 each, 1 is half: fine */
	v.local_tasks = 4;
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 0);
	v.local_tasks = 2;
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 1);
}

/* Enough CPUs, or unknown ones: no finding. */
static void enough_or_unknown(void **state)
{
	const char *env[] = { NULL };
	struct distenv_cpu_view v = view(2, 2, 2);
	struct distenv_error f;

	(void) state;
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 0);
	v = view(4, 2, 8);
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 0);
	v = view(0, 8, 64);
	assert_int_equal(distenv_cpu_budget_check(&v, env, &f), 0);
}

static void omp_threads(void **state)
{
	struct distenv_cpu_view v = view(8, 2, 0);

	(void) state;
	assert_int_equal(distenv_omp_threads(&v), 4);
	v = view(3, 2, 0);
	assert_int_equal(distenv_omp_threads(&v), 1);
	v = view(1, 4, 0);
	assert_int_equal(distenv_omp_threads(&v), 1);
	v = view(0, 2, 0);
	assert_int_equal(distenv_omp_threads(&v), 0);
}

/* sbatch inside another job: its CPU variables named, with the job. */
static void submit_inside_another_job(void **state)
{
	const char *inside[] = { "SLURM_JOB_ID=41",
				 "SLURM_CPU_BIND=quiet,mask_cpu:0x1",
				 "SLURM_CPUS_PER_TASK=1", NULL };
	const char *plain_job[] = { "SLURM_JOB_ID=41", NULL };
	const char *no_job[] = { "SLURM_CPU_BIND=quiet,map_cpu:0", NULL };
	struct distenv_error f;

	(void) state;
	assert_int_equal(distenv_submit_inherits_cpus(inside, &f), 1);
	assert_non_null(strstr(f.what, "this runs inside job 41 "
				       "(SLURM_JOB_ID) and passes its "
				       "SLURM_CPU_BIND=quiet,mask_cpu:0x1, "
				       "SLURM_CPUS_PER_TASK=1 on"));
	assert_non_null(strstr(f.fix, "env -u SLURM_CPU_BIND"));
	assert_int_equal(distenv_submit_inherits_cpus(plain_job, &f), 0);
	assert_int_equal(distenv_submit_inherits_cpus(no_job, &f), 0);
}

/* Node 2 of a 2-node torchrun step with --distenv-nproc=2, its task on
 * cpus CPUs, with env entry a (or none); returns distenv_derive's. */
static int derive(struct world *w, int check, uint32_t cpus, const char *a)
{
	distenv_vars_free(&w->vars);
	memset(w, 0, sizeof(*w));
	distenv_site_defaults(&w->site);
	w->req.mode = DISTENV_MODE_TORCHRUN;
	w->req.nproc = 2;
	w->req.check = check;
	w->env[0] = "SLURM_JOB_CPUS_PER_NODE=2(x2)";
	w->env[1] = a;
	fx_worker_step(&w->step, 77, 3, "n2", "n1", w->env);
	w->step.task_cpus = cpus;
	snprintf(w->step.task_cpu_list, sizeof(w->step.task_cpu_list), "%s",
		 cpus == 1 ? "0" : "0-1");
	fx_cluster_node(&w->fx, 2, "n1");
	fx_addr(&w->fx, "10.77.0.1", "eth0");
	return distenv_derive(&w->site, &w->req, &w->step, &w->fx.net, &w->vars,
			      &w->err);
}

/* Warn: the step runs with a warning, OMP_NUM_THREADS is 1; strict:
 * the step fails; off: no finding, the variable still set. */
static void derive_check_levels(void **state)
{
	static struct world w;
	const struct distenv_var *omp;

	(void) state;
	assert_int_equal(derive(&w, DISTENV_CHECK_WARN, 1, NULL), 0);
	assert_int_equal(w.vars.n_warnings, 1);
	assert_non_null(strstr(w.vars.warnings[0].what,
			       "starts 2 processes (NPROC_PER_NODE=2, "
			       "torchrun's workers)"));
	omp = distenv_vars_find(&w.vars, "OMP_NUM_THREADS");
	assert_non_null(omp);
	assert_string_equal(omp->value, "1");
	assert_int_equal(omp->action, DISTENV_ACTION_SET);
	assert_non_null(strstr(omp->reason, "the task's 1 CPU (0) / its 2 "
					    "processes"));
	assert_int_equal(derive(&w, DISTENV_CHECK_STRICT, 1, NULL), -1);
	assert_non_null(strstr(w.err.what, "the task may run on 1 CPU"));
	assert_int_equal(derive(&w, DISTENV_CHECK_OFF, 1, NULL), 0);
	assert_int_equal(w.vars.n_warnings, 0);
	assert_non_null(distenv_vars_find(&w.vars, "OMP_NUM_THREADS"));
}

/* A healthy task: no finding, OMP_NUM_THREADS = 2 CPUs / 2 workers; a
 * user's OMP_NUM_THREADS is kept; unknown CPUs: nothing. */
static void derive_healthy_and_kept(void **state)
{
	static struct world w;

	(void) state;
	assert_int_equal(derive(&w, DISTENV_CHECK_STRICT, 2, NULL), 0);
	assert_int_equal(w.vars.n_warnings, 0);
	assert_string_equal(distenv_vars_value(&w.vars, "OMP_NUM_THREADS"),
			    "1");
	assert_int_equal(derive(&w, DISTENV_CHECK_WARN, 2, "OMP_NUM_THREADS=6"),
			 0);
	assert_string_equal(distenv_vars_value(&w.vars, "OMP_NUM_THREADS"),
			    "6");
	assert_int_equal(distenv_vars_find(&w.vars, "OMP_NUM_THREADS")->action,
			 DISTENV_ACTION_KEPT);
	assert_int_equal(derive(&w, DISTENV_CHECK_STRICT, 0, NULL), 0);
	assert_null(distenv_vars_find(&w.vars, "OMP_NUM_THREADS"));
	distenv_vars_free(&w.vars);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(job_cpus_on_node),
		cmocka_unit_test(fewer_cpus_than_processes),
		cmocka_unit_test(default_one_cpu),
		cmocka_unit_test(count_that_does_not_explain),
		cmocka_unit_test(under_half_of_share),
		cmocka_unit_test(enough_or_unknown),
		cmocka_unit_test(omp_threads),
		cmocka_unit_test(submit_inside_another_job),
		cmocka_unit_test(derive_check_levels),
		cmocka_unit_test(derive_healthy_and_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
