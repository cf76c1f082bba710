"""Student LoRA SFT on a tiny llama built in code (random weights, a BPE tokenizer trained on a few sentences,
a ChatML template): the full path - train, save, reload with PeftModel, generate, merge - in seconds."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from ie.config import ConfigError
from student.config import StudentConfig
from student.data import DataError, build_sft_datasets

CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
          "+ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
SYSTEM = "You are an information extraction system."
QUESTION = "Extract the entities from: Alice works for Acme in Paris."
ANSWER = '{"entities": [{"text": "Alice", "type": "PER"}]}'


def chat(answer: str = ANSWER) -> dict:
    return {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION},
                         {"role": "assistant", "content": answer}]}


def build_tiny_model(out: Path) -> Path:
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


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def chat_jsonl(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "train.jsonl"
    path.write_text("\n".join(json.dumps(chat()) for _ in range(8)) + "\n")
    return path


def tiny_config(model: Path, data: Path, out: Path, **overrides) -> StudentConfig:
    settings = {"data": str(data), "eval_data": str(data), "model": str(model), "output_dir": str(out),
                "max_steps": 3, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1,
                "learning_rate": 1e-2, "logging_steps": 1, "eval_steps": 2, "lora_r": 4, "lora_alpha": 8,
                "lora_dropout": 0.0, "warmup_steps": 0}
    return StudentConfig(**{**settings, **overrides})


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


def test_cpu_defaults_are_fp32_without_checkpointing(tiny_model, chat_jsonl, tmp_path):
    from student.train import build_sft_config, build_trainer, resolve_device

    cfg = tiny_config(tiny_model, chat_jsonl, tmp_path)
    device = resolve_device(cfg, cuda=False)
    args = build_sft_config(cfg, device, has_eval=True)
    assert (args.bf16, args.fp16, args.gradient_checkpointing, args.completion_only_loss) == (False, False, False,
                                                                                              True)
    assert build_trainer(cfg, device, str(tiny_model)).model.dtype == torch.float32


def test_cuda_settings_default_to_bf16_with_checkpointing(tiny_model, chat_jsonl, tmp_path):
    cfg = tiny_config(tiny_model, chat_jsonl, tmp_path, load_in_4bit=True)
    device = cfg.device_settings(cuda=True)
    assert (device.precision, device.gradient_checkpointing, device.load_in_4bit) == ("bf16", True, True)
    with pytest.raises(ConfigError, match="'load_in_4bit'.*CUDA"):
        cfg.device_settings(cuda=False)


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
    assert resolved["device"] == {"precision": "fp32", "gradient_checkpointing": False, "load_in_4bit": False}
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


def test_bf16_is_rejected_on_cpu(chat_jsonl):
    with pytest.raises(ConfigError, match="field 'precision'"):
        StudentConfig(data=str(chat_jsonl), precision="bf16").device_settings(cuda=False)


def test_dataset_dict_directory_is_accepted(tmp_path):
    from datasets import Dataset, DatasetDict

    DatasetDict({"train": Dataset.from_list([chat()] * 3), "validation": Dataset.from_list([chat()])}) \
        .save_to_disk(str(tmp_path / "sft"))
    datasets = build_sft_datasets(tmp_path / "sft")
    assert (len(datasets["train"]), len(datasets["validation"])) == (3, 1)
    assert datasets["train"][0]["completion"] == [{"role": "assistant", "content": ANSWER}]


@pytest.mark.parametrize("line, message", [
    ('{"messages": [{"role": "user", "content": "q"}]}', "last message must be the assistant"),
    ('{"messages": [{"role": "bot", "content": "q"}]}', "role is 'bot'"),
    ("not json", "not JSON"),
])
def test_bad_examples_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(chat()) + "\n" + line + "\n")
    with pytest.raises(DataError, match=f"bad.jsonl:2: .*{message}"):
        build_sft_datasets(path)


def test_base_model_names_map_to_cached_checkpoints(monkeypatch, tmp_path):
    import ie.llm.local
    from student import base_model

    monkeypatch.setenv("CROSSAGENTIE_CACHE", str(tmp_path))
    monkeypatch.setattr(ie.llm.local, "model_path", lambda name: Path(f"/models/{Path(name).name}"))
    monkeypatch.setattr(base_model, "ensure_hf_checkpoint", lambda gguf_path, out_dir: (gguf_path, out_dir))
    assert base_model.resolve_base_model("qwen2.5-coder-0.5b") == str(
        (Path("/models/qwen2.5-coder-0.5b"), tmp_path / "hf" / "qwen2.5-coder-0.5b"))
    assert base_model.resolve_base_model("/x/My-Model.Q4_K_M.gguf") == str(
        (Path("/models/My-Model.Q4_K_M.gguf"), tmp_path / "hf" / "My-Model.Q4_K_M"))
    assert base_model.resolve_base_model(str(tmp_path)) == str(tmp_path)  # an HF directory passes through
    assert base_model.resolve_base_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.mark.slow
def test_gguf_conversion_is_faithful_and_cached(monkeypatch, tmp_path):
    """smollm2-135m GGUF -> plain HF checkpoint: same logits as transformers' GGUF loading; converted once."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ie.llm.local import model_path
    from student.base_model import CONVERTED_RECORD, resolve_base_model

    monkeypatch.setenv("CROSSAGENTIE_CACHE", str(tmp_path))
    converted = Path(resolve_base_model("smollm2-135m"))
    assert converted == tmp_path / "hf" / "smollm2-135m"
    record = (converted / CONVERTED_RECORD).read_text()
    assert resolve_base_model("smollm2-135m") == str(converted)
    assert (converted / CONVERTED_RECORD).read_text() == record  # cache hit, not converted again
    gguf = model_path("smollm2-135m")
    ids = AutoTokenizer.from_pretrained(converted)("The capital of France is", return_tensors="pt").input_ids
    reference = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    plain = AutoModelForCausalLM.from_pretrained(converted)
    assert getattr(plain.config, "quantization_config", None) is None
    torch.testing.assert_close(plain(ids).logits, reference(ids).logits)
