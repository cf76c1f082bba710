"""Tiny bases built in code and LoRA adapters over them with random A and B (peft's default leaves B at 0, which
would hide a wrong layout or scale), saved as train_student.py saves a student."""
from __future__ import annotations

from pathlib import Path

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def save_random_adapter(tmp_path: Path, model_type: str, name: str = "adapter", seed: int = 0,
                        **lora_kwargs) -> Path:
    """tmp_path/name: a LoRA over a 2-layer `model_type` base whose config is (re)saved to tmp_path/base, which the
    adapter names as its base_model_name_or_path."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(model_type, vocab_size=64, hidden_size=32, intermediate_size=48,
                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    config.save_pretrained(tmp_path / "base")
    torch.manual_seed(seed)
    settings = {"r": 4, "lora_alpha": 8, "target_modules": TARGETS, "init_lora_weights": False, **lora_kwargs}
    model = get_peft_model(AutoModelForCausalLM.from_config(config), LoraConfig(**settings))
    model.peft_config["default"].base_model_name_or_path = str(tmp_path / "base")
    model.save_pretrained(tmp_path / name)
    return tmp_path / name
