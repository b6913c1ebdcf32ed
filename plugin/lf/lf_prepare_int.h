/* lf_prepare_int.h: shared by lf_prepare.c and lf_prepare_env.c only. */
#ifndef DISTENV_LF_PREPARE_INT_H
#define DISTENV_LF_PREPARE_INT_H

#include "distenv_error.h"
#include "distenv_sys_file.h"
#include "lf_doc.h"

/* Read path under rules and parse it into doc; *errnum (may be NULL)
 * is 0 when it was read, else the errno of the read. 0 or -1 with err. */
int lf_prepare_load_doc(const struct distenv_file_rules *rules,
			const char *path, struct lf_doc *doc, int *errnum,
			struct distenv_error *err);

#endif
