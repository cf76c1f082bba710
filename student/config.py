"""Typed configs for the student stage: `StudentConfig` (LoRA SFT, `train_student.py`) and `OpenAIFineTuneConfig`
(`python -m student.openai_ft`).

Both are plain dataclasses whose fields carry help text; `TrlParser` turns them into CLI flags, fills them from
`--config FILE.yaml` and lets flags override the file. `__post_init__` rejects bad values with a message that
names the field and the fix, before any model is loaded. Settings that depend on the hardware (precision,
gradient checkpointing, 4-bit loading) are derived by `StudentConfig.device_settings(cuda)`, a pure function.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ie.config import ConfigError
from ie.fine_tune_plan import DEFAULT_MODEL, MAX_TOKENS_PER_EXAMPLE, MIN_EXAMPLES

DEFAULT_TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _help(text: str, **kwargs):
    return field(metadata={"help": text}, **kwargs)


@dataclass
class StudentConfig:
    data: str = _help("Distilled chat data: a `datasets` DatasetDict directory (save_to_disk, splits train/"
                      "validation, a `messages` column) or a train JSONL of {\"messages\": [...]} lines.", default="")
    eval_data: str | None = _help("Validation JSONL, when `data` is a JSONL file (a DatasetDict brings its own "
                                  "`validation` split).", default=None)
    model: str = _help("Base model: an embedded catalogue name (configs/models.yaml, converted from GGUF once and "
                       "cached under cache_dir()/hf/<name>), a .gguf file, an HF model directory or an HF id.",
                       default="qwen2.5-coder-0.5b")
    output_dir: str = _help("Where the adapter, tokenizer, training log and resolved config are written.",
                            default="runs/student")
    max_length: int = _help("Longest tokenized example; a longer one is refused (cut, it would lose its "
                                  "end-of-turn token).", default=2048)
    num_train_epochs: float = _help("Passes over the training split (ignored when max_steps > 0).", default=2.0)
    max_steps: int = _help("Stop after this many optimizer steps; -1 = run num_train_epochs.", default=-1)
    per_device_train_batch_size: int = _help("Examples per device per step.", default=1)
    per_device_eval_batch_size: int = _help("Examples per device per evaluation step.", default=4)
    gradient_accumulation_steps: int = _help("Micro-batches accumulated per optimizer step.", default=4)
    learning_rate: float = _help("Peak learning rate of the LoRA weights.", default=2e-4)
    lr_scheduler_type: str = _help("transformers scheduler name (cosine, linear, constant, ...).", default="cosine")
    warmup_steps: float = _help("Linear warmup: an integer step count, or a float in [0, 1) = ratio of all steps.",
                                default=0.03)
    weight_decay: float = _help("AdamW weight decay.", default=0.0)
    logging_steps: int = _help("Log the loss every N optimizer steps.", default=10)
    eval_steps: int = _help("Evaluate on the validation split every N optimizer steps.", default=100)
    save_steps: int = _help("Write a resumable checkpoint every N optimizer steps.", default=500)
    save_total_limit: int = _help("Checkpoints kept in output_dir (oldest deleted first).", default=2)
    resume_from_checkpoint: str | None = _help(
        "Go on from a checkpoint (its optimizer, scheduler and data position): a checkpoint-N folder, or `last` for "
        "the newest in output_dir; num_train_epochs / max_steps say where the run ends.", default=None)
    seed: int = _help("Seed for data order, dropout and LoRA init.", default=0)
    lora_r: int = _help("LoRA rank.", default=16)
    lora_alpha: int = _help("LoRA alpha; the update is scaled by alpha / r.", default=32)
    lora_dropout: float = _help("Dropout on the LoRA input, in [0, 1).", default=0.05)
    lora_target_modules: list[str] = field(
        default_factory=lambda: list(DEFAULT_TARGET_MODULES),
        metadata={"help": "Linear layers that get a LoRA adapter (module name suffixes), or ['all-linear']."})
    precision: Literal["auto", "bf16", "fp16", "fp32"] = _help(
        "auto = bf16 on CUDA and on a CPU with AMX bf16 tiles, else fp32. bf16 on CPU autocasts over fp32 weights: "
        "with AMX 1.3x faster a step, and a student level with fp32's on dev (docs/RESULTS.md); not measured "
        "without AMX, so auto keeps fp32 there.", default="auto")
    gradient_checkpointing: bool | None = _help("Recompute activations to save memory; unset = on for CUDA, off "
                                                "on CPU (where it only costs time).", default=None)
    load_in_4bit: bool = _help("QLoRA: load the base in 4-bit NF4 through bitsandbytes (CUDA only).",
                               default=False)
    merge: bool = _help("Also write the base with the adapter merged in, to output_dir/merged.", default=False)
    export_gguf: bool = _help("Also write output_dir/adapter.gguf, a llama.cpp LoRA adapter for serving the "
                              "student on CPU over the base GGUF (llama and qwen2 architectures).", default=False)
    report_to: str = _help("Trainer integrations to log to (none, tensorboard, wandb, ...).", default="none")

    def __post_init__(self) -> None:
        _require(bool(self.data), "data", "is required: pass --data DIR_or_FILE.jsonl")
        if self.data and not Path(self.data).exists():
            raise ConfigError(f"field 'data': {self.data} does not exist; point it at the distill stage's "
                              "DatasetDict directory or train JSONL")
        if self.eval_data is not None:
            _require(Path(self.eval_data).is_file(), "eval_data", f"{self.eval_data} is not a file")
            _require(Path(self.data).is_file(), "eval_data",
                     "is only for a JSONL `data`; a DatasetDict directory brings its own validation split")
        if self.resume_from_checkpoint not in (None, "last"):
            _require((Path(self.resume_from_checkpoint) / "trainer_state.json").is_file(), "resume_from_checkpoint",
                     f"{self.resume_from_checkpoint} is not a checkpoint folder (no trainer_state.json); give a "
                     "checkpoint-N folder of an earlier run, or `last`")
        for name in ("max_length", "per_device_train_batch_size", "per_device_eval_batch_size",
                     "gradient_accumulation_steps", "logging_steps", "eval_steps", "save_steps", "lora_r",
                     "lora_alpha"):
            _require(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        _require(self.max_steps > 0 or self.num_train_epochs > 0, "max_steps",
                 "set max_steps > 0 or num_train_epochs > 0")
        _require(self.learning_rate > 0, "learning_rate", f"must be > 0, got {self.learning_rate}")
        _require(0 <= self.lora_dropout < 1, "lora_dropout", f"must be in [0, 1), got {self.lora_dropout}")
        _require(self.warmup_steps >= 0, "warmup_steps", f"must be >= 0, got {self.warmup_steps}")
        _require(bool(self.lora_target_modules), "lora_target_modules",
                 "name at least one module, e.g. [q_proj, v_proj] or [all-linear]")
        _require(not (self.load_in_4bit and self.precision in ("fp32", "fp16")), "precision",
                 "4-bit QLoRA computes in bf16: set precision to bf16 or auto")

    def device_settings(self, cuda: bool, cpu_amx_bf16: bool = False) -> DeviceSettings:
        """Precision and memory settings for this hardware (`cpu_amx_bf16`: the CPU has AMX bf16 tiles); rejects
        combinations it cannot run."""
        if not cuda:
            _require(not self.load_in_4bit, "load_in_4bit", "needs a CUDA GPU (bitsandbytes); unset it on CPU")
            _require(self.precision != "fp16", "precision", "fp16 mixed precision needs CUDA; use auto, fp32 or bf16")
            precision = ("bf16" if cpu_amx_bf16 else "fp32") if self.precision == "auto" else self.precision
            return DeviceSettings(precision, bool(self.gradient_checkpointing), False, cpu=True)
        precision = "bf16" if self.precision == "auto" else self.precision
        checkpointing = True if self.gradient_checkpointing is None else self.gradient_checkpointing
        return DeviceSettings(precision, checkpointing, self.load_in_4bit)


@dataclass(frozen=True)
class DeviceSettings:
    precision: Literal["bf16", "fp16", "fp32"]
    gradient_checkpointing: bool
    load_in_4bit: bool
    cpu: bool = False

    @property
    def torch_dtype_name(self) -> str:
        """The dtype the base is loaded in. On CPU it is always float32: bf16 there is autocast over fp32 weights,
        which ran no slower than bf16 weights and keeps the optimizer's updates exact."""
        if self.cpu:
            return "float32"
        return {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[self.precision]


@dataclass
class OpenAIFineTuneConfig:
    train: str = _help("Training JSONL of {\"messages\": [...]} lines (the distill stage's export).", default="")
    validation: str | None = _help("Validation JSONL, same format.", default=None)
    model: str = _help("Base model to fine-tune (a snapshot name from the price table or any the API accepts).",
                       default=DEFAULT_MODEL)
    n_epochs: int | None = _help("Epochs; unset = OpenAI's automatic choice (estimated here the same way).",
                                 default=None)
    batch_size: int | None = _help("Batch size; unset = automatic.", default=None)
    learning_rate_multiplier: float | None = _help("LR multiplier; unset = automatic.", default=None)
    suffix: str = _help("Up to 64 characters added to the fine-tuned model's name.", default="crossagentie")
    seed: int = _help("Job seed, for reproducible runs.", default=0)
    price_per_mtok: float | None = _help("USD per million training tokens; unset = the built-in price table.",
                                         default=None)
    min_examples: int = _help("Fewest training examples the API accepts.", default=MIN_EXAMPLES)
    max_tokens_per_example: int = _help("Longest example the API trains on (longer ones are rejected here).",
                                        default=MAX_TOKENS_PER_EXAMPLE)
    dry_run: bool = _help("Validate and estimate cost only; nothing is uploaded.", default=False)
    base_url: str | None = _help("OpenAI-compatible API base URL (default: the SDK's).", default=None)
    poll_interval_s: float = _help("First wait between job status polls; doubles up to poll_max_s.", default=5.0)
    poll_max_s: float = _help("Longest wait between job status polls.", default=60.0)
    timeout_s: float = _help("Give up waiting for the job after this many seconds (the job keeps running).",
                             default=24 * 3600.0)

    def __post_init__(self) -> None:
        _require(bool(self.train), "train", "is required: pass --train FILE.jsonl")
        _require(Path(self.train).is_file(), "train", f"{self.train} is not a file")
        if self.validation is not None:
            _require(Path(self.validation).is_file(), "validation", f"{self.validation} is not a file")
        _require(len(self.suffix) <= 64, "suffix", "must be at most 64 characters")
        for name in ("n_epochs", "batch_size", "learning_rate_multiplier", "price_per_mtok"):
            value = getattr(self, name)
            _require(value is None or value > 0, name, f"must be > 0 when set, got {value}")
        _require(self.poll_interval_s > 0 and self.poll_max_s >= self.poll_interval_s, "poll_interval_s",
                 "needs 0 < poll_interval_s <= poll_max_s")


def _require(ok: bool, name: str, fix: str) -> None:
    if not ok:
        raise ConfigError(f"field '{name}': {fix}")
