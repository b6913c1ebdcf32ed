/* lf_prepare_env.c: the step's facts from its environment, and the
 * storage-mark step (contracts in lf_prepare.h). Apart from lf_prepare.c,
 * which reads, decides and writes. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "distenv_env.h"
#include "lf_ckpt.h"
#include "lf_prepare.h"
#include "lf_prepare_int.h"
#include "lf_sys.h"

int lf_prepare_mark_storage(const char *config,
			    const struct lf_container *container,
			    uint32_t job_id, uint32_t restart, const char *node,
			    char *written, size_t len,
			    struct distenv_error *err)
{
	struct lf_doc yaml;
	const char *output_dir = NULL;
	char text[LF_MARK_TEXT_MAX];
	char host[PATH_MAX];
	int found = 0, rc = -1;

	if (!config || !config[0])
		return distenv_error_set(err, "--distenv-mark-storage",
					 "give --distenv-lf-config with it",
					 "no training YAML to take output_dir "
					 "from");
	if (lf_prepare_load_doc(&lf_sys_yaml_rules, config, &yaml, NULL, err))
		return -1;
	lf_get_str(&yaml, lf_doc_root(&yaml), "output_dir", &output_dir, &found,
		   NULL);
	if (!output_dir || !output_dir[0]) {
		distenv_error_set(err, config, "set output_dir in the YAML",
				  "no output_dir to mark");
	} else if (lf_mark_text(job_id, restart, node, text, sizeof(text)) <
		   0) {
		distenv_error_set(err, "SLURMD_NODENAME", NULL,
				  "'%s' cannot name a mark file", node);
	} else if (lf_container_host(container, "output_dir", output_dir, host,
				     sizeof(host), err)) {
		/* a pyxis step's output_dir under no mount: no mark */
	} else if (!lf_sys_mark_write(host, node, text, err)) {
		if (written)
			snprintf(written, len, "%s", host);
		rc = 0;
	}
	lf_doc_free(&yaml);
	return rc;
}

uint32_t lf_restart_count(const char *const *env)
{
	const char *v = distenv_env_get(env, "SLURM_RESTART_COUNT");
	uint32_t n = 0;

	if (v && distenv_parse_u32(v, 1000000, &n))
		n = 0;
	return n;
}

void lf_prepare_facts_env(const char *const *env, struct lf_prepare_facts *f,
			  char *partner, size_t partner_len)
{
	f->force_torchrun = distenv_env_user_value(env, "FORCE_TORCHRUN");
	f->alloc_conf = distenv_env_get(env, "PYTORCH_CUDA_ALLOC_CONF");
	f->optim_torch = distenv_env_user_value(env, "OPTIM_TORCH");
	f->tmpdir = distenv_env_get(env, "TMPDIR");
	f->restart_count = lf_restart_count(env);
	lf_sys_mark_partner(env, f->node_id, f->nnodes, partner, partner_len);
	f->partner_name = partner;
}

int lf_prepare_resume_env(const char *const *env,
			  struct lf_prepare_request *req, char *path,
			  size_t path_len, struct distenv_error *err)
{
	const char *v = distenv_env_get(env, "DISTENV_RESUME");

	if (req->resume != LF_RESUME_DEFAULT || !v || !v[0])
		return 0;
	if (lf_parse_resume(v, "DISTENV_RESUME", &req->resume, path, path_len,
			    err))
		return -1;
	req->resume_path = path;
	return 0;
}
