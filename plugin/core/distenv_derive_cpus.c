/*
 * distenv_derive_cpus.c: the task's CPU budget (distenv_cpus.h) and
 * OMP_NUM_THREADS, from the CPUs the task may run on (step->task_cpus)
 * and the processes it starts: NPROC_PER_NODE in torchrun and elastic
 * mode (torchrun starts that many workers), 1 in tasks mode.
 */
#include <stdio.h>
#include <stdlib.h>

#include "distenv_cpus.h"
#include "distenv_derive_int.h"

/* The processes the task starts, and what says so, into v. */
static void task_procs(struct derivation *d, struct distenv_cpu_view *v,
		       char *from, size_t len)
{
	const char *nproc = distenv_vars_value(d->vars, "NPROC_PER_NODE");
	unsigned long n;
	char *end;

	v->procs = 1;
	snprintf(from, len, "one process per task in %s mode",
		 distenv_mode_name(d->mode));
	if (d->mode != DISTENV_MODE_TORCHRUN && d->mode != DISTENV_MODE_ELASTIC)
		return;
	n = nproc ? strtoul(nproc, &end, 10) : 0;
	if (!nproc || *end || n == 0 || n > 100000)
		return; /* "gpu", "auto": torchrun counts them itself */
	v->procs = (uint32_t) n;
	snprintf(from, len, "NPROC_PER_NODE=%lu, torchrun's workers", n);
}

static int emit_omp(struct derivation *d, const struct distenv_cpu_view *v)
{
	uint32_t n = distenv_omp_threads(v);
	char value[16];

	if (!n)
		return 0;
	snprintf(value, sizeof(value), "%u", n);
	return derive_emit(d, "OMP_NUM_THREADS", value,
			   "the task's %u CPU%s (%s) / its %u process%s "
			   "(at least 1); unset, torchrun would give each "
			   "worker 1",
			   v->task_cpus, v->task_cpus == 1 ? "" : "s",
			   v->task_list, v->procs, v->procs == 1 ? "" : "es");
}

int derive_cpu_budget(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	struct distenv_cpu_view v = { 0 };
	struct distenv_error finding;
	char from[96];

	if (s->kind == DISTENV_STEP_BATCH || !s->task_cpus)
		return 0;
	v.task_cpus = s->task_cpus;
	v.task_list = s->task_cpu_list;
	task_procs(d, &v, from, sizeof(from));
	v.procs_from = from;
	v.job_cpus = distenv_job_cpus_on_node(s->envp, s->node_id, s->nnodes);
	v.local_tasks = s->local_ntasks ? s->local_ntasks : 1;
	v.node = s->node_name;
	distenv_error_clear(&finding);
	if (d->req->check != DISTENV_CHECK_OFF &&
	    distenv_cpu_budget_check(&v, s->envp, &finding)) {
		if (d->req->check == DISTENV_CHECK_STRICT) {
			*d->err = finding;
			return -1;
		}
		distenv_vars_warn(d->vars, &finding);
	}
	return emit_omp(d, &v);
}
