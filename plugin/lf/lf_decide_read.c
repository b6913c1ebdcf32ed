/* lf_decide_read.c: the facts lf_decide reads from the training YAML and
 * its DeepSpeed config (lf_decide_steps.h). */
#include "lf_decide_steps.h"

int lf_decide_read_user_keys(struct lf_doc *doc, struct user_keys *u,
			     struct distenv_error *err)
{
	yaml_node_t *root = lf_doc_root(doc), *v;
	int found;

	memset(u, 0, sizeof(*u));
	if (lf_get_str(doc, root, "stage", &u->stage, &found, err) ||
	    lf_get_str(doc, root, "finetuning_type", &u->finetuning_type,
		       &found, err) ||
	    lf_get_str(doc, root, "output_dir", &u->output_dir, &found, err) ||
	    lf_get_str(doc, root, "deepspeed", &u->deepspeed, &found, err) ||
	    lf_get_str(doc, root, "model_name_or_path", &u->model_path, &found,
		       err) ||
	    lf_get_bool(doc, root, "save_on_each_node", &u->soen,
			&u->soen_found, err) ||
	    lf_get_bool(doc, root, "overwrite_output_dir", &u->overwrite,
			&u->overwrite_found, err) ||
	    lf_get_bool(doc, root, "do_train", &u->do_train, &u->do_train_found,
			err) ||
	    lf_get_int(doc, root, "cutoff_len", &u->cutoff_len,
		       &u->cutoff_found, err) ||
	    lf_get_int(doc, root, "lora_rank", &u->lora_rank,
		       &u->lora_rank_found, err) ||
	    lf_get_int(doc, root, "per_device_train_batch_size", &u->batch,
		       &u->batch_found, err) ||
	    lf_get_bool(doc, root, "disable_gradient_checkpointing", &u->no_gc,
			&u->no_gc_found, err) ||
	    lf_get_bool(doc, root, "enable_liger_kernel", &u->liger,
			&u->liger_found, err) ||
	    lf_get_bool(doc, root, "use_unsloth_gc", &u->unsloth_gc,
			&u->unsloth_gc_found, err) ||
	    lf_get_str(doc, root, "flash_attn", &u->flash_attn, &found, err))
		return -1;
	/* resume_from_checkpoint: a path (transformers also takes true,
	 * "the last checkpoint in output_dir"). */
	v = lf_map_get(doc, root, "resume_from_checkpoint", NULL);
	if (v && !lf_is_null(v)) {
		int b;

		if (!lf_scalar(v))
			return lf_get_str(doc, root, "resume_from_checkpoint",
					  &u->resume, &found, err);
		if (v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    !lf_parse_bool(lf_scalar(v), &b))
			u->resume = b ? "true" : NULL;
		else
			u->resume = lf_scalar(v);
	}
	return 0;
}

/* A size key of zero_optimization: a number, or "auto" (transformers
 * fills it, integrations/deepspeed.py), read as 0. */
static int ds_size(struct lf_doc *ds, yaml_node_t *zero, const char *key,
		   long long *out, struct distenv_error *err)
{
	yaml_node_t *v = lf_map_get(ds, zero, key, NULL);
	int found = 0;

	*out = 0;
	if (v && lf_scalar(v) && !strcmp(lf_scalar(v), "auto"))
		return 0;
	return lf_get_int(ds, zero, key, out, &found, err);
}

static int offload_device(struct lf_doc *ds, yaml_node_t *zero, const char *key,
			  int *cpu, int *found, struct distenv_error *err)
{
	yaml_node_t *o = lf_map_get(ds, zero, key, NULL);
	const char *dev = NULL;
	int f = 0;
	char where[LF_DOC_NAME_MAX + 32];

	*cpu = 0;
	*found = o && !lf_is_null(o);
	if (!*found)
		return 0;
	if (o->type != YAML_MAPPING_NODE) {
		lf_node_where(ds, o, where, sizeof(where));
		return distenv_error_set(err, where,
					 "write it as {\"device\": "
					 "\"cpu\", \"pin_memory\": true}",
					 "zero_optimization.%s is not a "
					 "mapping",
					 key);
	}
	if (lf_get_str(ds, o, "device", &dev, &f, err))
		return -1;
	*cpu = f && !strcmp(dev, "cpu");
	return 0;
}

int lf_decide_read_ds(struct lf_doc *ds, struct ds_facts *f,
		      struct distenv_error *err)
{
	yaml_node_t *zero =
		lf_map_get(ds, lf_doc_root(ds), "zero_optimization", NULL);
	int found = 0;
	char where[LF_DOC_NAME_MAX + 32];

	memset(f, 0, sizeof(*f));
	if (!zero || lf_is_null(zero))
		return 0;
	if (zero->type != YAML_MAPPING_NODE) {
		lf_node_where(ds, zero, where, sizeof(where));
		return distenv_error_set(err, where, NULL,
					 "zero_optimization is not a mapping");
	}
	if (lf_get_int(ds, zero, "stage", &f->stage, &f->stage_found, err))
		return -1;
	{
		yaml_node_t *g =
			lf_map_get(ds, zero,
				   "stage3_gather_16bit_weights_on_model_save",
				   NULL);
		/* Transformers fills "auto" values; this one it leaves to
		 * DeepSpeed, whose default is false. */
		if (!(g && lf_scalar(g) && !strcmp(lf_scalar(g), "auto")) &&
		    lf_get_bool(ds, zero,
				"stage3_gather_16bit_weights_on_model_save",
				&f->gather16, &found, err))
			return -1;
	}
	if (ds_size(ds, zero, "stage3_max_live_parameters", &f->max_live,
		    err) ||
	    ds_size(ds, zero, "stage3_prefetch_bucket_size", &f->prefetch,
		    err) ||
	    ds_size(ds, zero, "reduce_bucket_size", &f->reduce, err) ||
	    offload_device(ds, zero, "offload_param", &f->param_cpu,
			   &f->param_found, err) ||
	    offload_device(ds, zero, "offload_optimizer", &f->optim_cpu,
			   &f->optim_found, err))
		return -1;
	return 0;
}
