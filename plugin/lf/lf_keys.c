/* lf_keys.c: the known top-level keys (sources in lf_keys.h). */
#include "lf_keys.h"

#include <string.h>

static const char *const known_keys[] = {
	/* hparams/model_args.py */
	"crop_to_patches", "init_special_tokens", "kt_expert_checkpoint_path",
	"kt_lora_expert_intermediate_size", "kt_lora_expert_num",
	"kt_use_lora_experts", "kt_weight_path", "new_special_tokens_config",
	"sglang_lora_backend", "use_kt", "use_kv_cache", "use_v1_kernels",
	"model_name_or_path", "adapter_name_or_path", "adapter_folder",
	"cache_dir", "use_fast_tokenizer", "resize_vocab",
	"split_special_tokens", "add_tokens", "add_special_tokens",
	"new_special_tokens", "model_revision", "low_cpu_mem_usage",
	"rope_scaling", "flash_attn", "shift_attn", "mixture_of_depths",
	"use_unsloth", "use_unsloth_gc", "enable_liger_kernel",
	"moe_aux_loss_coef", "disable_gradient_checkpointing",
	"use_reentrant_gc", "upcast_layernorm", "upcast_lmhead_output",
	"train_from_scratch", "infer_backend", "offload_folder", "use_cache",
	"infer_dtype", "hf_hub_token", "ms_hub_token", "om_hub_token",
	"print_param_status", "trust_remote_code", "compute_dtype",
	"device_map", "model_max_length", "block_diag_attn",
	"quantization_method", "quantization_bit", "quantization_type",
	"double_quantization", "quantization_device_map", "image_max_pixels",
	"image_min_pixels", "image_do_pan_and_scan", "video_max_pixels",
	"video_min_pixels", "video_fps", "video_maxlen", "audio_sampling_rate",
	"use_audio_in_video", "export_dir", "export_size", "export_device",
	"export_quantization_bit", "export_quantization_dataset",
	"export_quantization_nsamples", "export_quantization_maxlen",
	"export_legacy_format", "export_hub_model_id", "vllm_maxlen",
	"vllm_gpu_util", "vllm_enforce_eager", "vllm_max_lora_rank",
	"vllm_config", "sglang_maxlen", "sglang_mem_fraction",
	"sglang_tp_size", "sglang_config", "image_resolution",
	"video_resolution", "use_dora",
	/* hparams/data_args.py */
	"preserve_thinking",
	"template", "dataset", "eval_dataset", "dataset_dir", "media_dir",
	"cutoff_len", "train_on_prompt", "mask_history", "streaming",
	"buffer_size", "mix_strategy", "interleave_probs", "overwrite_cache",
	"preprocessing_batch_size", "preprocessing_num_workers",
	"max_samples", "eval_num_beams", "ignore_pad_token_for_loss",
	"val_size", "eval_on_each_dataset", "packing", "neat_packing",
	"tool_format", "default_system", "enable_thinking",
	"tokenized_path", "data_shared_file_system",
	/* hparams/finetuning_args.py */
	"asft_alpha", "eaft_alpha", "hyper_parallel_args", "module_dropout",
	"oft_block_size", "oft_rank", "oft_target", "pref_bco_weight",
	"use_asft_loss", "use_dft_loss", "use_eaft_loss",
	"use_hyper_parallel",
	"stage", "finetuning_type", "use_llama_pro", "use_adam_mini",
	"use_muon", "freeze_vision_tower", "freeze_multi_modal_projector",
	"freeze_language_model", "compute_accuracy",
	"disable_shuffling", "plot_loss", "include_effective_tokens_per_second",
	"pure_bf16", "use_galore", "use_apollo", "use_badam", "use_swanlab",
	"freeze_trainable_layers", "freeze_trainable_modules",
	"freeze_extra_modules", "additional_target", "lora_alpha",
	"lora_dropout", "lora_rank", "lora_target", "loraplus_lr_ratio",
	"loraplus_lr_embedding", "use_rslora", "pissa_init", "pissa_iter",
	"pissa_convert", "create_new_adapter", "pref_beta", "pref_ftx",
	"pref_loss", "dpo_label_smoothing", "kto_chosen_weight",
	"kto_rejected_weight", "simpo_gamma", "ppo_buffer_size",
	"ppo_epochs", "ppo_score_norm", "ppo_target", "ppo_whiten_rewards",
	"ref_model", "ref_model_adapters", "ref_model_quantization_bit",
	"reward_model", "reward_model_adapters",
	"reward_model_quantization_bit", "reward_model_type",
	"ld_alpha", "galore_target", "galore_rank", "galore_update_interval",
	"galore_scale", "galore_proj_type", "galore_layerwise",
	"apollo_target", "apollo_rank", "apollo_update_interval",
	"apollo_scale", "apollo_proj", "apollo_proj_type",
	"apollo_scale_type", "apollo_layerwise", "apollo_scale_front",
	"badam_mode", "badam_start_block", "badam_switch_mode",
	"badam_switch_interval", "badam_update_ratio", "badam_mask_mode",
	"badam_verbose", "swanlab_project", "swanlab_workspace",
	"swanlab_run_name", "swanlab_mode", "swanlab_api_key",
	"swanlab_logdir", "swanlab_lark_webhook_url", "swanlab_lark_secret",
	"use_mca", "early_stopping_steps",
	/* hparams/generating_args.py */
	"do_sample", "temperature", "top_p", "top_k", "num_beams",
	"max_length", "max_new_tokens", "repetition_penalty",
	"length_penalty", "skip_special_tokens",
	/* hparams/training_args.py (LLaMA-Factory's additions) */
	"enable_torch_profiler", "master_addr", "master_port",
	"profile_modules", "profiler_active_steps", "profiler_output_dir",
	"profiler_profile_memory", "profiler_record_shapes",
	"profiler_repeat", "profiler_wait_steps", "profiler_warmup_steps",
	"profiler_with_stack",
	"ray_run_name", "ray_storage_path", "ray_storage_filesystem",
	"ray_num_workers", "resources_per_worker", "placement_strategy",
	"ray_init_kwargs", "fp8", "fp8_backend", "fp8_enable_fsdp_float8_all_gather",
	/* transformers TrainingArguments / Seq2SeqTrainingArguments */
	"ddp_static_graph", "enable_jit_checkpoint", "hub_revision",
	"include_num_input_tokens_seen", "liger_kernel_config",
	"parallelism_config", "project", "trackio_bucket_id",
	"trackio_space_id", "trackio_static_space_id",
	"train_sampling_strategy",
	"output_dir", "overwrite_output_dir", "do_train", "do_eval",
	"do_predict", "eval_strategy", "evaluation_strategy",
	"prediction_loss_only", "per_device_train_batch_size",
	"per_device_eval_batch_size", "gradient_accumulation_steps",
	"eval_accumulation_steps", "eval_delay", "torch_empty_cache_steps",
	"learning_rate", "weight_decay", "adam_beta1", "adam_beta2",
	"adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps",
	"lr_scheduler_type", "lr_scheduler_kwargs", "warmup_ratio",
	"warmup_steps", "log_level", "log_level_replica", "log_on_each_node",
	"logging_dir", "logging_strategy", "logging_first_step",
	"logging_steps", "logging_nan_inf_filter", "save_strategy",
	"save_steps", "save_total_limit", "save_safetensors",
	"save_on_each_node", "save_only_model",
	"restore_callback_states_from_checkpoint", "use_cpu", "seed",
	"data_seed", "jit_mode_eval", "bf16", "fp16", "fp16_opt_level",
	"half_precision_backend", "bf16_full_eval", "fp16_full_eval", "tf32",
	"local_rank", "ddp_backend", "tpu_num_cores", "debug",
	"dataloader_drop_last", "eval_steps", "dataloader_num_workers",
	"dataloader_prefetch_factor", "past_index", "run_name",
	"disable_tqdm", "remove_unused_columns", "label_names",
	"load_best_model_at_end", "metric_for_best_model",
	"greater_is_better", "ignore_data_skip", "fsdp", "fsdp_config",
	"deepspeed", "label_smoothing_factor", "optim", "optim_args",
	"adafactor", "group_by_length", "length_column_name", "report_to",
	"ddp_find_unused_parameters", "ddp_bucket_cap_mb",
	"ddp_broadcast_buffers", "dataloader_pin_memory",
	"dataloader_persistent_workers", "skip_memory_metrics",
	"push_to_hub", "resume_from_checkpoint", "hub_model_id",
	"hub_strategy", "hub_token", "hub_private_repo",
	"hub_always_push", "gradient_checkpointing",
	"gradient_checkpointing_kwargs", "include_inputs_for_metrics",
	"include_for_metrics", "eval_do_concat_batches",
	"auto_find_batch_size", "full_determinism", "torchdynamo",
	"ray_scope", "ddp_timeout", "torch_compile", "torch_compile_backend",
	"torch_compile_mode", "neftune_noise_alpha", "optim_target_modules",
	"batch_eval_metrics", "eval_on_start", "use_liger_kernel",
	"eval_use_gather_object", "average_tokens_across_devices",
	"accelerator_config", "sortish_sampler", "predict_with_generate",
	"generation_max_length", "generation_num_beams",
	"generation_config",
};

int lf_key_known(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
		if (!strcmp(known_keys[i], key))
			return 1;
	return 0;
}

#define EDIT_MAX 128

size_t lf_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t prev[EDIT_MAX + 1], cur[EDIT_MAX + 1];

	if (la >= EDIT_MAX || lb >= EDIT_MAX)
		return EDIT_MAX;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? sub : del;
			if (ins < cur[j])
				cur[j] = ins;
		}
		memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
	}
	return prev[lb];
}

const char *lf_key_nearest(const char *key)
{
	size_t i, best = EDIT_MAX, limit = strlen(key) / 3;
	const char *near = NULL;

	if (limit < 2)
		limit = 2;
	for (i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++) {
		size_t lk = strlen(key), lc = strlen(known_keys[i]), d;

		/* the distance is at least the difference in length */
		if ((lk > lc ? lk - lc : lc - lk) > limit)
			continue;
		d = lf_edit_distance(key, known_keys[i]);

		if (d < best) {
			best = d;
			near = known_keys[i];
		}
	}
	return best <= limit ? near : NULL;
}
