"""Student LoRA SFT (`student.train`) on the tiny llama of `tests.tiny_student`: the full path - train, save,
reload with PeftModel, generate, merge - in seconds."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from student.data import DataError
from tests.tiny_student import ANSWER, chat, tiny_config

os.environ["HF_HUB_OFFLINE"] = "1"

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


@pytest.fixture(scope="session")
def trained(tiny_model, chat_jsonl, tmp_path_factory):
    from student.train import train

    out = tmp_path_factory.mktemp("run")
    return train(tiny_config(tiny_model, chat_jsonl, out, merge=True, export_gguf=True), cuda=False)


def test_loss_covers_only_the_assistant_answer(tiny_model, chat_jsonl, tmp_path):
    from student.train import build_trainer, resolve_device

    cfg = tiny_config(tiny_model, chat_jsonl, tmp_path)
    trainer = build_trainer(cfg, resolve_device(cfg, cuda=False), str(tiny_model))
    row = trainer.train_dataset[0]
    trained_ids = [t for t, label in zip(row["input_ids"], row["labels"]) if label != -100]
    assert trainer.processing_class.decode(trained_ids) == ANSWER + "<|im_end|>\n"
    assert row["labels"][0] == -100  # the system/user prompt is masked


def distilled_example(path: Path) -> str:
    """One training example as the distill stage writes it (CoNLL04 prompt, a record's labels); its answer."""
    from ie.config import load_config, resolve_config_path
    from ie.schema import Entity, Record
    from ie.student_format import to_example

    text = "Ronald Reagan was born in Tampico ."
    record = Record(id="r", text=text, entities=[Entity(start=0, end=13, type="Peop", text="Ronald Reagan"),
                                                 Entity(start=26, end=33, type="Loc", text="Tampico")])
    messages = to_example(record, load_config(resolve_config_path("conll04")).task_schema)
    path.write_text(json.dumps({"messages": messages}) + "\n")
    return messages[-1]["content"]


def trained_text(model: Path, data: Path, out: Path, **overrides) -> tuple[str, list[int], int]:
    """What the loss covers in the first tokenized example, its labels, and the tokenizer's eos id."""
    from student.train import build_trainer, resolve_device

    cfg = tiny_config(model, data, out, eval_data=None, **overrides)
    trainer = build_trainer(cfg, resolve_device(cfg, cuda=False), str(model))
    row, tokenizer = trainer.train_dataset[0], trainer.processing_class
    trained = [t for t, label in zip(row["input_ids"], row["labels"]) if label != -100]
    return tokenizer.decode(trained), row["labels"], tokenizer.eos_token_id


def test_a_distilled_example_trains_the_end_of_turn_token(tiny_model, tmp_path):
    answer = distilled_example(tmp_path / "d.jsonl")
    text, labels, eos = trained_text(tiny_model, tmp_path / "d.jsonl", tmp_path / "run", max_length=16384)
    assert text == answer + "<|im_end|>\n" and eos in labels  # the student learns where its answer ends


def test_an_example_longer_than_max_length_is_refused_not_cut(tiny_model, tmp_path):
    distilled_example(tmp_path / "d.jsonl")
    with pytest.raises(DataError, match=r"d.jsonl \[train\]: example 0 is \d+ tokens, over max_length 64"):
        trained_text(tiny_model, tmp_path / "d.jsonl", tmp_path / "run", max_length=64)


@pytest.mark.slow
def test_the_students_own_tokenizer_trains_the_end_of_turn_token(tiny_model, tmp_path):
    """The embedded qwen2.5-coder-0.5b's tokenizer (read from its GGUF) on the tiny llama: TRL renders the
    Qwen chat template, and the answer's `<|im_end|>` (the tokenizer's eos, where llama.cpp and vLLM stop) is in
    the loss."""
    import shutil

    from transformers import AutoTokenizer

    from ie.llm.local import model_path

    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    gguf = model_path("qwen2.5-coder-0.5b")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    assert tokenizer.eos_token == "<|im_end|>"
    tokenizer.save_pretrained(model)
    answer = distilled_example(tmp_path / "d.jsonl")
    text, labels, eos = trained_text(model, tmp_path / "d.jsonl", tmp_path / "run")
    assert text == answer + "<|im_end|>\n" and eos in labels


def test_cpu_auto_is_fp32_without_checkpointing_unless_the_cpu_has_amx_bf16(tiny_model, chat_jsonl, tmp_path):
    from student.train import build_sft_config, build_trainer, resolve_device

    cfg = tiny_config(tiny_model, chat_jsonl, tmp_path, precision="auto")
    assert resolve_device(cfg, cuda=False, cpu_amx_bf16=True).precision == "bf16"
    device = resolve_device(cfg, cuda=False, cpu_amx_bf16=False)
    args = build_sft_config(cfg, device, has_eval=True)
    assert (args.bf16, args.fp16, args.gradient_checkpointing, args.completion_only_loss) == (False, False, False,
                                                                                              True)
    assert build_trainer(cfg, device, str(tiny_model)).model.dtype == torch.float32


@pytest.mark.parametrize("capabilities, precision", [({"amx_bf16": True}, "bf16"), ({"amx_bf16": False}, "fp32"),
                                                     (None, "fp32")])
def test_cpu_auto_reads_amx_bf16_from_torch(capabilities, precision, chat_jsonl, monkeypatch):
    """`auto` follows torch's report of the CPU; a torch without `get_capabilities` (None here) trains in fp32."""
    from student.config import StudentConfig
    from student.train import resolve_device

    if capabilities is None:
        monkeypatch.delattr(torch.cpu, "get_capabilities", raising=False)
    else:
        monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: capabilities)
    assert resolve_device(StudentConfig(data=str(chat_jsonl)), cuda=False).precision == precision


def test_bf16_on_cpu_trains_in_autocast_over_fp32_weights(tiny_model, chat_jsonl, tmp_path):
    from student.train import build_sft_config, build_trainer, resolve_device

    cfg = tiny_config(tiny_model, chat_jsonl, tmp_path, eval_data=None, precision="bf16", max_steps=1)
    device = resolve_device(cfg, cuda=False)
    args = build_sft_config(cfg, device, has_eval=False)
    assert (args.bf16, args.use_cpu, args.gradient_checkpointing) == (True, True, False)
    trainer = build_trainer(cfg, device, str(tiny_model))
    assert trainer.model.dtype == torch.float32 and trainer.accelerator.mixed_precision == "bf16"
    assert math.isfinite(trainer.train().training_loss) and trainer.state.global_step == 1
    assert all(p.dtype == torch.float32 for name, p in trainer.model.named_parameters() if "lora_" in name)


def test_training_changes_the_adapter_not_the_base(tiny_model, chat_jsonl, tmp_path):
    from student.train import build_trainer, resolve_device

    cfg = tiny_config(tiny_model, chat_jsonl, tmp_path, eval_data=None)
    trainer = build_trainer(cfg, resolve_device(cfg, cuda=False), str(tiny_model))
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    assert all(("lora_" in name) == p.requires_grad for name, p in trainer.model.named_parameters())
    trainer.train()
    after = dict(trainer.model.named_parameters())
    changed = {name for name, p in before.items() if not torch.equal(p, after[name])}
    lora_b = {name for name in before if "lora_B" in name}
    assert lora_b and lora_b <= changed  # B starts at zero: every B moved
    assert all("lora_" in name for name in changed)  # no base weight moved


def test_a_run_goes_on_from_its_checkpoint_to_the_new_end(tiny_model, chat_jsonl, tmp_path):
    from student.config import ConfigError
    from student.train import train

    first = tmp_path / "first"
    train(tiny_config(tiny_model, chat_jsonl, first, max_steps=2, save_steps=2), cuda=False)
    state_file = first / "checkpoint-2" / "trainer_state.json"
    state = json.loads(state_file.read_text())
    state["log_history"][0]["loss"] = 123.0  # a mark: a resumed run carries the checkpoint's history on
    state_file.write_text(json.dumps(state))
    longer = tiny_config(tiny_model, chat_jsonl, tmp_path / "longer", max_steps=4,
                         resume_from_checkpoint=str(first / "checkpoint-2"))
    train(longer, cuda=False)
    losses = {e["step"]: e["loss"] for e in json.loads((tmp_path / "longer" / "training_log.json").read_text())
              if "loss" in e}
    assert sorted(losses) == [1, 2, 3, 4] and losses[1] == 123.0  # steps 1-2 came from the checkpoint
    again = tiny_config(tiny_model, chat_jsonl, tmp_path / "longer", max_steps=5, resume_from_checkpoint="last")
    train(again, cuda=False)
    assert (tmp_path / "longer" / "checkpoint-5").is_dir()
    with pytest.raises(ConfigError, match="resume_from_checkpoint.*not a checkpoint folder"):
        tiny_config(tiny_model, chat_jsonl, tmp_path, resume_from_checkpoint=str(first))


def test_saved_files_are_the_adapter_and_merge_applies_it(trained, tiny_model):
    from safetensors.torch import load_file

    adapter = load_file(str(trained.adapter_dir / "adapter_model.safetensors"))
    assert adapter and all("lora_A" in name or "lora_B" in name for name in adapter)
    q_proj = "model.layers.0.self_attn.q_proj.weight"
    base = load_file(str(tiny_model / "model.safetensors"))[q_proj]
    assert not torch.equal(load_file(str(trained.merged_dir / "model.safetensors"))[q_proj], base)


def test_run_writes_config_log_and_metrics(trained):
    out = trained.adapter_dir
    resolved = json.loads((out / "student_config.json").read_text())
    assert resolved["device"] == {"precision": "fp32", "gradient_checkpointing": False, "load_in_4bit": False,
                                  "cpu": True}
    assert resolved["config"]["lora_r"] == 4
    log = json.loads((out / "training_log.json").read_text())
    assert any("loss" in entry for entry in log) and any("eval_loss" in entry for entry in log)
    assert "eval_loss" in json.loads((out / "metrics.json").read_text())
    assert (out / "tokenizer.json").is_file() and (out / "adapter.gguf").is_file()


def test_saved_adapter_reloads_and_generates(trained, tiny_model):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(trained.adapter_dir)
    prompt = tokenizer.apply_chat_template(chat()["messages"][:2], add_generation_prompt=True, return_tensors="pt",
                                           return_dict=True)
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    base_logits = base(**prompt).logits
    model = PeftModel.from_pretrained(base, str(trained.adapter_dir)).eval()
    assert not torch.allclose(model(**prompt).logits, base_logits)
    out = model.generate(**prompt, max_new_tokens=5, do_sample=False)
    assert out.shape[1] > prompt["input_ids"].shape[1]


def test_merged_model_matches_the_peft_model(trained, tiny_model):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    ids = torch.tensor([[5, 6, 7, 8]])
    peft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model),
                                           str(trained.adapter_dir)).eval()
    merged = AutoModelForCausalLM.from_pretrained(trained.merged_dir).eval()
    torch.testing.assert_close(merged(ids).logits, peft_model(ids).logits, atol=1e-4, rtol=1e-4)


def test_cli_reads_yaml_then_flags(tiny_model, chat_jsonl, tmp_path):
    from train_student import build_parser

    yaml_path = tmp_path / "student.yaml"
    yaml_path.write_text(f"model: {tiny_model}\nlora_r: 8\nmax_steps: 7\nlora_target_modules: [q_proj, v_proj]\n")
    (cfg,) = build_parser().parse_args_and_config(["--config", str(yaml_path), "--data", str(chat_jsonl),
                                                   "--max_steps", "2", "--merge"])
    assert (cfg.lora_r, cfg.max_steps, cfg.lora_target_modules, cfg.merge) == (8, 2, ["q_proj", "v_proj"], True)
    assert cfg.model == str(tiny_model) and cfg.data == str(chat_jsonl)
