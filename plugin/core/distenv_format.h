/*
 * distenv_format.h: text forms of a derived variable list, shared by
 * --distenv-show (SPANK glue) and the distenv command.
 */
#ifndef DISTENV_FORMAT_H
#define DISTENV_FORMAT_H

#include <stdio.h>

#include "distenv_options.h"
#include "distenv_step.h"
#include "distenv_vars.h"

/*
 * The --distenv-show block for one node: a heading naming the node, its
 * index, the step and the mode, then one line per variable, "NAME=VALUE",
 * "set" or "kept (set by user)", and the reason; with step->topo_note,
 * a "topology:" line before the variables, and a "warning:" line for
 * each of vars' warnings after them. Every line starts with
 * "distenv: " so interleaved blocks of several nodes stay readable.
 * Written to out in one fwrite so blocks of different nodes do not mix.
 */
void distenv_format_show(FILE *out, const struct distenv_step *step,
			 enum distenv_mode mode,
			 const struct distenv_vars *vars);

/*
 * `export NAME='value'` lines, the value single-quoted for POSIX sh
 * (a ' inside becomes '\''), for eval "$(distenv env)". Variables the
 * user set are left out: they are already in the environment.
 */
void distenv_format_exports(FILE *out, const struct distenv_vars *vars);

/*
 * One line per warning of vars, "distenv: warning: WHERE: WHAT. FIX"
 * (distenv_error_format), in one fwrite: the job log's copy, which the
 * caller prints once per node.
 */
void distenv_format_warnings(FILE *out, const struct distenv_vars *vars);

#endif
