"""Make a tiny Qwen2 model for running LLaMA-Factory on CPU, never downloaded.

    python tiny_model.py DATASET.json OUT_DIR

DATASET.json is a preference dataset in LLaMA-Factory's alpaca form (a list
of {"instruction", "input", "chosen", "rejected"}); the tokenizer is a
byte-level BPE trained on its text with the `tokenizers` library, with the
special tokens of LLaMA-Factory's `qwen` template (src/llamafactory/data/
template.py: <|im_start|>, <|im_end|> as end of turn and eos) and Qwen2's
<|endoftext|> as padding. The model is transformers' Qwen2ForCausalLM with
random weights from a fixed seed and small sizes, saved as safetensors:
OUT_DIR then holds config.json, model.safetensors, tokenizer.json and
tokenizer_config.json, about 1 MB, in a few seconds.

The same inputs give the same files, so runs on it are comparable.
"""

import json
import os
import sys

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# LLaMA-Factory's qwen template's default system prompt: trained on too, so
# it is a few tokens, not hundreds of bytes.
SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def corpus(dataset_path):
    with open(dataset_path, encoding="utf-8") as f:
        rows = json.load(f)
    texts = [SYSTEM, "user", "assistant", "system"]
    for r in rows:
        for key in ("instruction", "input", "chosen", "rejected"):
            if r.get(key):
                texts.append(r[key])
    return texts


def make_tokenizer(texts, out_dir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        model_max_length=2048,
    )
    fast.save_pretrained(out_dir)
    return fast


def make_model(tok, out_dir):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tok),
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        use_cache=False,
    )
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(out_dir, safe_serialization=True)
    return model


def main(argv):
    if len(argv) != 3:
        print("usage: tiny_model.py DATASET.json OUT_DIR", file=sys.stderr)
        return 2
    dataset_path, out_dir = argv[1], argv[2]
    os.makedirs(out_dir, exist_ok=True)
    tok = make_tokenizer(corpus(dataset_path), out_dir)
    model = make_model(tok, out_dir)
    params = sum(p.numel() for p in model.parameters())
    print(f"tiny_model: {out_dir}: Qwen2, {params} parameters, vocabulary {len(tok)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
