"""`student.config`: the LoRA and OpenAI fine-tuning configs refuse bad values naming the field, and settings
that need CUDA."""
from __future__ import annotations

import pytest

from ie.config import ConfigError
from student.config import OpenAIFineTuneConfig, StudentConfig
from tests.tiny_student import tiny_config


@pytest.mark.parametrize("overrides, field", [
    ({"lora_r": 0}, "lora_r"),
    ({"lora_dropout": 1.0}, "lora_dropout"),
    ({"data": ""}, "data"),
    ({"data": "/nonexistent/sft"}, "data"),
    ({"lora_target_modules": []}, "lora_target_modules"),
    ({"load_in_4bit": True, "precision": "fp32"}, "precision"),
])
def test_config_errors_name_the_field(overrides, field, chat_jsonl):
    settings = {"data": str(chat_jsonl), **overrides}
    with pytest.raises(ConfigError, match=f"field '{field}'"):
        StudentConfig(**settings)


def test_cpu_takes_bf16_as_autocast_over_fp32_weights_and_refuses_fp16(chat_jsonl):
    device = StudentConfig(data=str(chat_jsonl), precision="bf16").device_settings(cuda=False)
    assert (device.precision, device.cpu, device.torch_dtype_name) == ("bf16", True, "float32")
    assert StudentConfig(data=str(chat_jsonl)).device_settings(cuda=False).precision == "fp32"
    with pytest.raises(ConfigError, match="field 'precision'"):
        StudentConfig(data=str(chat_jsonl), precision="fp16").device_settings(cuda=False)


def test_cuda_settings_default_to_bf16_with_checkpointing(tiny_model, chat_jsonl, tmp_path):
    cfg = tiny_config(tiny_model, chat_jsonl, tmp_path, load_in_4bit=True, precision="auto")
    device = cfg.device_settings(cuda=True)
    assert (device.precision, device.gradient_checkpointing, device.load_in_4bit) == ("bf16", True, True)
    with pytest.raises(ConfigError, match="'load_in_4bit'.*CUDA"):
        cfg.device_settings(cuda=False)


def test_student_config_refuses_an_unknown_yaml_key(tmp_path):
    pytest.importorskip("trl")
    from train_student import build_parser

    data = tmp_path / "train.jsonl"
    data.write_text("{}\n")
    config = tmp_path / "student.yaml"
    config.write_text(f"data: {data}\nlearning_rat: 0.1\n")
    with pytest.raises(ValueError, match="Unknown arguments from config file: .*--learning_rat"):
        build_parser().parse_args_and_config(["--config", str(config)])


@pytest.mark.parametrize("overrides, field", [
    ({"train": "/nonexistent.jsonl"}, "train"),
    ({"n_epochs": 0}, "n_epochs"),
    ({"suffix": "x" * 65}, "suffix"),
])
def test_openai_config_errors_name_the_field(chat_jsonl, overrides, field):
    with pytest.raises(ConfigError, match=f"field '{field}'"):
        OpenAIFineTuneConfig(**{"train": str(chat_jsonl), **overrides})
