"""LoRA SFT of the student on the distilled chat examples. No training loop here: this module builds the
dataset, `SFTConfig` and `LoraConfig` and hands them to TRL's `SFTTrainer`.

    result = train(StudentConfig(data="runs/distill/sft", model="qwen2.5-coder-0.5b", max_steps=100))
    result.adapter_dir / "adapter_model.safetensors"

`output_dir` receives: the peft adapter + tokenizer (loadable with `PeftModel.from_pretrained`),
`student_config.json` (the resolved config and device settings), `training_log.json` (the trainer's log history),
`metrics.json` (final train/eval metrics), and optionally `merged/` (`--merge`) and `adapter.gguf`
(`--export-gguf`, for llama.cpp). Multi-GPU runs go through `accelerate launch` with configs/accelerate/*.yaml.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from student.base_model import resolve_base_model
from student.config import DeviceSettings, StudentConfig
from student.data import DataError, build_sft_datasets

if TYPE_CHECKING:
    from peft import LoraConfig
    from transformers import PreTrainedModel
    from trl import SFTConfig, SFTTrainer


@dataclass
class TrainResult:
    adapter_dir: Path
    metrics: dict[str, float]
    merged_dir: Path | None = None
    gguf_adapter: Path | None = None


# StudentConfig fields that are SFTConfig fields of the same name and meaning.
SFT_FIELDS = ("output_dir", "num_train_epochs", "max_steps", "per_device_train_batch_size",
              "per_device_eval_batch_size", "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type",
              "warmup_steps", "weight_decay", "logging_steps", "eval_steps", "save_steps", "save_total_limit", "seed",
              "report_to")


def build_sft_config(cfg: StudentConfig, device: DeviceSettings, has_eval: bool) -> SFTConfig:
    from trl import SFTConfig

    return SFTConfig(
        **{name: getattr(cfg, name) for name in SFT_FIELDS},
        eval_strategy="steps" if has_eval else "no",
        # Explicit on every device: TRL's defaults (bf16=True, checkpointing on) cost ~16x per step on CPU.
        bf16=device.precision == "bf16",
        fp16=device.precision == "fp16",
        use_cpu=device.cpu,
        activation_checkpointing=device.gradient_checkpointing,
        # Prompt-completion data: the loss covers only the assistant's answer (student.data explains why).
        completion_only_loss=True,
        # No truncation: TRL would cut a long example's end, the answer's end-of-turn token with it, and teach
        # the student not to stop. `check_lengths` refuses such examples instead.
        max_length=None,
    )


def build_lora_config(cfg: StudentConfig) -> LoraConfig:
    from peft import LoraConfig

    targets: list[str] | str = cfg.lora_target_modules
    if targets == ["all-linear"]:
        targets = "all-linear"
    return LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=targets, bias="none", task_type="CAUSAL_LM")


def load_base(model_path: str, device: DeviceSettings) -> PreTrainedModel:
    """The base model in the training dtype; for QLoRA, 4-bit NF4 and prepared for k-bit training."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = getattr(torch, device.torch_dtype_name)
    if not device.load_in_4bit:
        return AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype)
    from accelerate import PartialState
    from peft import prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                      bnb_4bit_compute_dtype=dtype)
    # One full copy per process under DDP: each rank places the 4-bit model on its own GPU.
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype, quantization_config=quantization,
                                                 device_map={"": PartialState().local_process_index})
    return prepare_model_for_kbit_training(model, use_gradient_checkpointing=device.gradient_checkpointing)


def resolve_device(cfg: StudentConfig, cuda: bool | None = None,
                   cpu_amx_bf16: bool | None = None) -> DeviceSettings:
    """`cfg`'s device settings for this machine (`cuda` and `cpu_amx_bf16` default to what torch sees)."""
    import torch

    if cpu_amx_bf16 is None:  # torch.cpu.get_capabilities is recent: a torch without it trains in fp32
        capabilities = getattr(torch.cpu, "get_capabilities", dict)()
        cpu_amx_bf16 = bool(capabilities.get("amx_bf16", False))
    return cfg.device_settings(torch.cuda.is_available() if cuda is None else cuda, cpu_amx_bf16)


def build_trainer(cfg: StudentConfig, device: DeviceSettings, model_path: str) -> SFTTrainer:
    """`SFTTrainer` over the distilled data, with the base from `model_path` (see `resolve_base_model`)."""
    from transformers import AutoTokenizer
    from trl import SFTTrainer

    datasets = build_sft_datasets(cfg.data, cfg.eval_data)
    has_eval = "validation" in datasets
    trainer = SFTTrainer(
        model=load_base(model_path, device),
        args=build_sft_config(cfg, device, has_eval),
        train_dataset=datasets["train"],
        eval_dataset=datasets["validation"] if has_eval else None,
        processing_class=AutoTokenizer.from_pretrained(model_path),
        peft_config=build_lora_config(cfg),
    )
    check_lengths(trainer.train_dataset, cfg.max_length, f"{cfg.data} [train]")
    if has_eval:
        check_lengths(trainer.eval_dataset, cfg.max_length, f"{cfg.data if cfg.eval_data is None else cfg.eval_data} "
                      "[validation]")
    return trainer


def check_lengths(dataset: Any, max_length: int, where: str) -> None:
    """A `DataError` naming the first tokenized example longer than `max_length`: cut to fit, it would lose its
    answer's end-of-turn token (the student would learn to run on to its token limit)."""
    for i, ids in enumerate(dataset["input_ids"]):
        if len(ids) > max_length:
            raise DataError(f"{where}: example {i} is {len(ids)} tokens, over max_length {max_length}; cut to fit "
                            "it would lose the answer's end-of-turn token. Raise --max_length or drop the example")


def train(cfg: StudentConfig, cuda: bool | None = None) -> TrainResult:
    device = resolve_device(cfg, cuda)
    model_path = resolve_base_model(cfg.model)
    trainer = build_trainer(cfg, device, model_path)
    out = Path(cfg.output_dir)
    resume = cfg.resume_from_checkpoint
    metrics = dict(trainer.train(resume_from_checkpoint=True if resume == "last" else resume).metrics)
    if trainer.eval_dataset is not None:
        metrics.update(trainer.evaluate())
    trainer.save_model(str(out))  # the peft adapter only (adapter_config.json + adapter_model.safetensors)
    result = TrainResult(adapter_dir=out, metrics=metrics)
    if not trainer.accelerator.is_main_process:
        return result
    trainer.processing_class.save_pretrained(out)
    resolved = {"config": dataclasses.asdict(cfg), "device": dataclasses.asdict(device), "base_model": model_path}
    write_run_record(out, resolved, trainer.state.log_history, metrics)
    if cfg.merge:
        result.merged_dir = merge_adapter(out, out / "merged", device)
    if cfg.export_gguf:
        from student.gguf_lora import export_gguf_lora

        result.gguf_adapter = export_gguf_lora(out, out / "adapter.gguf")
    return result


def write_run_record(out: Path, resolved: dict[str, Any], log_history: list[dict[str, Any]],
                     metrics: dict[str, float]) -> None:
    (out / "student_config.json").write_text(json.dumps(resolved, indent=2))
    (out / "training_log.json").write_text(json.dumps(log_history, indent=2))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))


def merge_adapter(adapter_dir: Path, out_dir: Path, device: DeviceSettings) -> Path:
    """Base + adapter merged into one plain checkpoint. The base is reloaded unquantized, so a QLoRA adapter is
    merged into full-precision weights rather than rounded into 4-bit ones."""
    import torch
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoTokenizer

    dtype = getattr(torch, device.torch_dtype_name)
    model = AutoPeftModelForCausalLM.from_pretrained(str(adapter_dir), dtype=dtype)
    model.merge_and_unload().save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(adapter_dir).save_pretrained(out_dir)
    return out_dir
