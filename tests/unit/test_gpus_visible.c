/* Unit tests: a CUDA_VISIBLE_DEVICES that names GPUs the task does not
 * have, which Slurm never sets, is said with the task's GPUs in both of
 * Slurm's numberings; every value Slurm sets passes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_derive.h"
#include "distenv_gpus.h"
#include "net_fixture.h"

static int check(const char *cvd, const char *on_node, const char *task_step,
		 const char *step_gpus, struct distenv_error *err)
{
	char a[64], b[64], c[64];
	const char *env[4] = {NULL, NULL, NULL, NULL};
	size_t n = 0;

	if (cvd) {
		snprintf(a, sizeof(a), "CUDA_VISIBLE_DEVICES=%s", cvd);
		env[n++] = a;
	}
	if (on_node) {
		snprintf(b, sizeof(b), "SLURM_GPUS_ON_NODE=%s", on_node);
		env[n++] = b;
	}
	if (task_step) {
		snprintf(c, sizeof(c), "SLURM_STEP_GPUS=%s", task_step);
		env[n++] = c;
	}
	distenv_error_clear(err);
	return distenv_gpus_check_visible(env, step_gpus, "n2", err);
}

/* The LLaMA-Factory recipe's CUDA_VISIBLE_DEVICES=0,1,2,3 in a step that
 * holds GPUs 4 and 5 of the node. */
static void names_a_gpu_the_task_lacks(void **state)
{
	struct distenv_error err;

	(void)state;
	assert_int_equal(check("0,1,2,3", "2", "4,5", NULL, &err), -1);
	assert_string_equal(err.where, "node n2: CUDA_VISIBLE_DEVICES (exported)");
	assert_string_equal(
		err.what,
		"you exported CUDA_VISIBLE_DEVICES=0,1,2,3 (Slurm never sets "
		"such a value): device 2 is not one of this task's GPUs, 4,5 "
		"(SLURM_STEP_GPUS); CUDA shows only the devices listed before "
		"the first index it cannot use, so the task sees fewer GPUs "
		"than the list names, or none");
	assert_string_equal(
		err.fix,
		"unset it (Slurm sets it for each task), or name the task's "
		"GPUs: 0,1 (CUDA's numbering when Slurm constrains the "
		"devices, ConstrainDevices=yes) or 4,5 (their global indices "
		"otherwise)");
	/* The step's list from user_init, and one numbering for both. */
	assert_int_equal(check("7", "2", NULL, "0,1", &err), -1);
	assert_non_null(strstr(err.what, "device 7 is not one of this task's "
					 "GPUs, 0,1 (SLURM_STEP_GPUS of the "
					 "step)"));
	assert_string_equal(err.fix, "unset it (Slurm sets it for each task), "
				     "or name the task's GPUs: 0,1");
}

/* What Slurm sets passes: the global indices, 0 to n-1 under
 * ConstrainDevices, a bound task's own GPU either way. */
static void slurm_values_pass(void **state)
{
	struct distenv_error err;

	(void)state;
	assert_int_equal(check("4,5", "2", "4,5", NULL, &err), 0);
	assert_int_equal(check("0,1", "2", "4,5", NULL, &err), 0);
	assert_int_equal(check("5", "8", "5", NULL, &err), 0);
	assert_int_equal(check("0", "8", "5", NULL, &err), 0);
	assert_int_equal(check("5", "8", "5", "0,1,2,3,4,5,6,7", &err), 0);
	assert_int_equal(check("NoDevFiles", "2", "4,5", NULL, &err), 0);
	assert_false(distenv_error_is_set(&err));
}

/* Nothing to judge: no Slurm GPU list, no count from Slurm, or entries
 * that are not plain indices. */
static void unknown_is_not_judged(void **state)
{
	struct distenv_error err;

	(void)state;
	assert_int_equal(check("0,1,2,3", NULL, NULL, NULL, &err), 0);
	assert_int_equal(check("0,1,2,3", "2", NULL, NULL, &err), 0);
	assert_int_equal(check("GPU-5e3a,GPU-77b1", "2", "4,5", NULL, &err), 0);
	assert_int_equal(check("MIG-1,9", "2", "4,5", NULL, &err), 0);
	assert_int_equal(check(NULL, "2", "4,5", NULL, &err), 0);
}

/* Through the derivation: a warning by default, the step fails under
 * --distenv-check=strict, nothing under off. */
static void check_modes(void **state)
{
	static const char *env[] = {"CUDA_VISIBLE_DEVICES=0,1,2,3",
				    "SLURM_GPUS_ON_NODE=2",
				    "SLURM_STEP_GPUS=4,5", NULL};
	struct distenv_site site;
	struct distenv_request req;
	struct distenv_step step;
	struct net_fixture fx;
	struct distenv_vars vars;
	struct distenv_error err;

	(void)state;
	distenv_site_defaults(&site);
	memset(&req, 0, sizeof(req));
	req.mode = DISTENV_MODE_TORCHRUN;
	fx_worker_step(&step, 77, 3, "n2", "n1", env);
	fx_cluster_node(&fx, 2, "n1");
	fx_addr(&fx, "10.77.0.1", "eth0");
	memset(&vars, 0, sizeof(vars));
	assert_int_equal(distenv_derive(&site, &req, &step, &fx.net, &vars,
					&err),
			 0);
	assert_int_equal(vars.n_warnings, 1);
	assert_string_equal(vars.warnings[0].where,
			    "node n2: CUDA_VISIBLE_DEVICES (exported)");
	assert_string_equal(distenv_vars_value(&vars, "NPROC_PER_NODE"), "2");
	distenv_vars_free(&vars);
	req.check = DISTENV_CHECK_STRICT;
	assert_int_equal(distenv_derive(&site, &req, &step, &fx.net, &vars,
					&err),
			 -1);
	assert_non_null(strstr(err.what, "device 2 is not one of this task's"));
	req.check = DISTENV_CHECK_OFF;
	assert_int_equal(distenv_derive(&site, &req, &step, &fx.net, &vars,
					&err),
			 0);
	assert_int_equal(vars.n_warnings, 0);
	distenv_vars_free(&vars);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_a_gpu_the_task_lacks),
		cmocka_unit_test(slurm_values_pass),
		cmocka_unit_test(unknown_is_not_judged),
		cmocka_unit_test(check_modes),
	};

	return cmocka_run_group_tests_name("gpus_visible", tests, NULL, NULL);
}
