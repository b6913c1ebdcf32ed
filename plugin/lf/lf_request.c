/* lf_request.c: the run preparation's options into its request. */
#include "lf_request.h"

#include "distenv_env.h"
#include "distenv_options.h"
#include "lf_decide.h"
#include "plan_model.h"

int lf_parse_count(const char *value, uint32_t lo, uint32_t hi,
		   const char *what, const char *where, uint32_t *out,
		   struct distenv_error *err)
{
	if (distenv_parse_u32(value, hi, out) || *out < lo)
		return distenv_error_set(err, where, NULL,
					 "'%s' is not %s from %u to %u",
					 value ? value : "", what, lo, hi);
	return 0;
}

int lf_request_set(struct lf_prepare_request *req, int id, const char *value,
		   const char *where, struct distenv_error *err)
{
	switch (id) {
	case DISTENV_OPT_LF_CONFIG:
		req->config = value;
		return 0;
	case DISTENV_OPT_LF_DIR:
		if (distenv_parse_lf_dir(value, where, err))
			return -1;
		req->dir = value;
		return 0;
	case DISTENV_OPT_SAVE_ON_EACH_NODE:
		return lf_parse_soen(value, where, &req->soen, err);
	case DISTENV_OPT_OFFLOAD:
		return lf_parse_offload(value, where, &req->offload, err);
	case DISTENV_OPT_CHECK:
		return lf_parse_check(value, where, &req->check, err);
	case DISTENV_OPT_MODEL_PARAMS:
		return plan_parse_params(value, where, &req->model_params, err);
	case DISTENV_OPT_GPU_MEM:
		return plan_parse_mem(value, where, &req->gpu_mem, err);
	case DISTENV_OPT_HOST_MEM:
		return plan_parse_mem(value, where, &req->host_mem, err);
	case DISTENV_OPT_ANSWER_TOKENS:
		return lf_parse_count(value, 1, 1048576, "a token count", where,
				      &req->answer_tokens, err);
	case DISTENV_OPT_LF_VERSION:
		if (plan_parse_version(value, where, &req->stack.lf, err))
			return -1;
		req->stack.lf_from = "--lf-version";
		return 0;
	case DISTENV_OPT_TF_VERSION:
		if (plan_parse_version(value, where, &req->stack.tf, err))
			return -1;
		req->stack.tf_from = "--transformers-version";
		return 0;
	case DISTENV_OPT_STORAGE_POLICY:
		req->storage_policy = value;
		return 0;
	default:
		return LF_REQUEST_NOT_OWNED;
	}
}
