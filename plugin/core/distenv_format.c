/* distenv_format.c: --distenv-show blocks and shell export lines. */
#include "distenv_format.h"

#include <stdlib.h>
#include <string.h>

void distenv_format_show(FILE *out, const struct distenv_step *step,
			 enum distenv_mode mode,
			 const struct distenv_vars *vars)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *mem = open_memstream(&text, &len);

	if (!mem)
		return;
	if (step->kind == DISTENV_STEP_BATCH && step->alloc_shell)
		fprintf(mem,
			"distenv: %s: the shell of job %u's allocation, "
			"outside any step (mode %s, %u node%s): the plugin "
			"exports nothing here; each srun step gets its own "
			"values\n",
			step->node_name, step->job_id, distenv_mode_name(mode),
			step->nnodes, step->nnodes == 1 ? "" : "s");
	else if (step->kind == DISTENV_STEP_BATCH)
		fprintf(mem,
			"distenv: %s: batch script of job %u (mode %s, "
			"%u node%s)\n",
			step->node_name, step->job_id, distenv_mode_name(mode),
			step->nnodes, step->nnodes == 1 ? "" : "s");
	else
		fprintf(mem,
			"distenv: %s: node %u of %u in step %u.%u (mode "
			"%s, task %u, %u task%s on this node)\n",
			step->node_name, step->node_id, step->nnodes,
			step->job_id, step->step_id, distenv_mode_name(mode),
			step->procid, step->local_ntasks,
			step->local_ntasks == 1 ? "" : "s");
	if (step->topo_note && step->topo_note[0])
		fprintf(mem, "distenv: %s:   topology: %s\n", step->node_name,
			step->topo_note);
	for (i = 0; i < vars->count; i++) {
		const struct distenv_var *v = &vars->items[i];

		fprintf(mem, "distenv: %s:   %s=%s  [%s] %s\n", step->node_name,
			v->name, v->value,
			v->action == DISTENV_ACTION_KEPT ? "kept" : "set",
			v->reason);
	}
	for (i = 0; i < vars->n_warnings; i++) {
		char line[3 * DISTENV_ERROR_TEXT];

		distenv_error_format(&vars->warnings[i], line, sizeof(line));
		fprintf(mem, "distenv: %s:   warning: %s\n", step->node_name,
			line);
	}
	fclose(mem);
	fwrite(text, 1, len, out);
	fflush(out);
	free(text);
}

static void put_quoted(FILE *out, const char *value)
{
	const char *p;

	fputc('\'', out);
	for (p = value; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", out);
		else
			fputc(*p, out);
	}
	fputc('\'', out);
}

void distenv_format_exports(FILE *out, const struct distenv_vars *vars)
{
	size_t i;

	for (i = 0; i < vars->count; i++) {
		const struct distenv_var *v = &vars->items[i];

		if (v->action != DISTENV_ACTION_SET)
			continue;
		fprintf(out, "export %s=", v->name);
		put_quoted(out, v->value);
		fputc('\n', out);
	}
}

void distenv_format_warnings(FILE *out, const struct distenv_vars *vars)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *mem;

	if (!vars->n_warnings)
		return;
	mem = open_memstream(&text, &len);
	if (!mem)
		return;
	for (i = 0; i < vars->n_warnings; i++) {
		char line[3 * DISTENV_ERROR_TEXT];

		distenv_error_format(&vars->warnings[i], line, sizeof(line));
		fprintf(mem, "distenv: warning: %s\n", line);
	}
	fclose(mem);
	fwrite(text, 1, len, out);
	fflush(out);
	free(text);
}
