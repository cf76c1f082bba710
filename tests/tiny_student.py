"""A tiny llama built in code (random weights, a BPE tokenizer trained on a few sentences, a ChatML template),
the chat example it learns, and the LoRA settings that train it in seconds."""
from __future__ import annotations

from pathlib import Path

from student.config import StudentConfig

CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
          "+ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
SYSTEM = "You are an information extraction system."
QUESTION = "Extract the entities from: Alice works for Acme in Paris."
ANSWER = '{"entities": [{"text": "Alice", "type": "PER"}]}'


def chat(answer: str = ANSWER) -> dict:
    return {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION},
                         {"role": "assistant", "content": answer}]}


def build_tiny_model(out: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|pad|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([SYSTEM, QUESTION, ANSWER, "Bob founded Initech in Berlin."] * 5, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|pad|>", eos_token="<|im_end|>")
    tokenizer.chat_template = CHATML
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=None, tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def tiny_config(model: Path, data: Path, out: Path, **overrides) -> StudentConfig:
    settings = {"data": str(data), "eval_data": str(data), "model": str(model), "output_dir": str(out),
                "max_steps": 3, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1,
                "learning_rate": 1e-2, "logging_steps": 1, "eval_steps": 2, "lora_r": 4, "lora_alpha": 8,
                "lora_dropout": 0.0, "warmup_steps": 0,
                "precision": "fp32"}  # not `auto`: the same numerics on every CPU, with AMX bf16 or without
    return StudentConfig(**{**settings, **overrides})
