"""GGUF LoRA export: file structure on tiny in-code models, and (slow) llama.cpp serving the exported adapter over
the smollm2-135m GGUF, or that GGUF with the adapter merged in (`student.gguf_merge`), reproduces what the peft
model does."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

torch = pytest.importorskip("torch")
gguf = pytest.importorskip("gguf")

from student.gguf_lora import ExportError, export_gguf_lora, llama_permute
from student.gguf_merge import merge_into_gguf
from tests.random_lora import save_random_adapter


def read(path: Path) -> tuple[dict, dict]:
    reader = gguf.GGUFReader(path)
    fields = {name: field.contents() for name, field in reader.fields.items()}
    return fields, {t.name: t for t in reader.tensors}


@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_export_writes_llama_cpp_adapter_layout(tmp_path, model_type):
    from safetensors.torch import load_file

    adapter = save_random_adapter(tmp_path, model_type)
    fields, tensors = read(export_gguf_lora(adapter, tmp_path / "a.gguf", base=tmp_path / "base"))
    assert fields["general.architecture"] == model_type
    assert (fields["general.type"], fields["adapter.type"], fields["adapter.lora.alpha"]) == ("adapter", "lora", 8.0)
    gguf_names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                  "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                  "mlp.down_proj": "ffn_down"}
    assert set(tensors) == {f"blk.{i}.{n}.weight.lora_{ab}" for i in range(2) for n in gguf_names.values()
                            for ab in "ab"}
    peft = load_file(str(adapter / "adapter_model.safetensors"))
    for layer in range(2):
        for module, name in gguf_names.items():
            key = f"base_model.model.model.layers.{layer}.{module}"
            a, b = peft[f"{key}.lora_A.weight"], peft[f"{key}.lora_B.weight"]
            ga, gb = tensors[f"blk.{layer}.{name}.weight.lora_a"], tensors[f"blk.{layer}.{name}.weight.lora_b"]
            # llama.cpp's shape checks: a.ne = [n_in, r], b.ne = [r, n_out] (GGUF lists dims innermost first)
            assert (list(ga.shape), list(gb.shape)) == ([a.shape[1], a.shape[0]], [b.shape[1], b.shape[0]])
            expected_b = b
            if model_type == "llama" and name in ("attn_q", "attn_k"):
                expected_b = llama_permute(b, 4, 2 if name == "attn_k" else None)
            torch.testing.assert_close(torch.from_numpy(ga.data.copy()).reshape(a.shape), a)
            torch.testing.assert_close(torch.from_numpy(gb.data.copy()).reshape(b.shape), expected_b)


def test_rslora_alpha_keeps_the_scale(tmp_path):
    adapter = save_random_adapter(tmp_path, "qwen2", use_rslora=True)
    fields, _ = read(export_gguf_lora(adapter, tmp_path / "a.gguf", base=tmp_path / "base"))
    assert fields["adapter.lora.alpha"] / 4 == pytest.approx(8 / 4 ** 0.5)  # llama.cpp scale alpha/r = peft's


def test_f16_export_halves_the_tensors(tmp_path):
    adapter = save_random_adapter(tmp_path, "llama")
    _, tensors = read(export_gguf_lora(adapter, tmp_path / "a.gguf", base=tmp_path / "base", dtype="f16"))
    assert {t.tensor_type.name for t in tensors.values()} == {"F16"}


@pytest.mark.parametrize("model_type, lora_kwargs, message", [
    ("llama", {"use_dora": True}, "use_dora"),
    ("llama", {"target_modules": ["q_proj"], "modules_to_save": ["lm_head"]}, "modules_to_save"),
    ("gpt2", {"target_modules": ["c_attn"]}, "architecture 'gpt2' is not supported"),
])
def test_unexportable_adapters_are_rejected(tmp_path, model_type, lora_kwargs, message):
    adapter = save_random_adapter(tmp_path, model_type, **lora_kwargs)
    with pytest.raises(ExportError, match=message):
        export_gguf_lora(adapter, tmp_path / "a.gguf", base=tmp_path / "base")


def assert_gguf_stores_permuted_qk(path: Path, base) -> None:
    """The GGUF's q/k tensors are exactly transformers' (un-permuted) ones under `llama_permute`."""
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    attention = base.model.layers[0].self_attn
    for proj, name, n_kv in [(attention.q_proj, "attn_q", None),
                             (attention.k_proj, "attn_k", base.config.num_key_value_heads)]:
        t = tensors[f"blk.0.{name}.weight"]
        stored = torch.from_numpy(gguf.quants.dequantize(t.data, t.tensor_type).copy()).reshape(proj.weight.shape)
        assert torch.equal(llama_permute(proj.weight.detach(), base.config.num_attention_heads, n_kv), stored)


@dataclass
class Memorized:
    """A q/k-only LoRA over smollm2-135m trained to continue `prompt` absurdly, and what peft generates with it."""
    gguf_path: Path
    base_dir: Path
    adapter_dir: Path
    prompt: str
    peft_text: str

    def served(self, model: Path, lora: list[Path]) -> str:
        import httpx

        from ie.llm.local import LocalServer

        with LocalServer(str(model), lora=lora, n_ctx=256, threads=2) as server:
            body = {"model": server.model_name, "prompt": self.prompt, "max_tokens": 6, "temperature": 0}
            return httpx.post(f"{server.base_url}/completions", json=body, timeout=60).json()["choices"][0]["text"]


@pytest.fixture(scope="module")
def memorized(tmp_path_factory) -> Memorized:
    """q/k alone catches a wrong row order; the test is about the export, not about training."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ie.llm.local import model_path

    tmp_path = tmp_path_factory.mktemp("memorized")
    path = model_path("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    base = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    base.config.save_pretrained(tmp_path / "base")
    assert_gguf_stores_permuted_qk(path, base)
    prompt, target = "The capital of France is", " a purple elephant named Gus."
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "k_proj"]))
    ids = tokenizer(prompt + target, return_tensors="pt").input_ids
    labels = ids.clone()
    labels[:, : tokenizer(prompt, return_tensors="pt").input_ids.shape[1]] = -100
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3)
    for _ in range(20):  # memorize one continuation
        model(input_ids=ids, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    prompt_ids = tokenizer(prompt, return_tensors="pt").input_ids
    peft_text = tokenizer.decode(model.generate(prompt_ids, max_new_tokens=6, do_sample=False)[0, prompt_ids.shape[1]:])
    assert peft_text.startswith(" a purple elephant")
    model.save_pretrained(tmp_path / "adapter")
    return Memorized(path, tmp_path / "base", tmp_path / "adapter", prompt, peft_text)


@pytest.mark.slow
def test_llama_cpp_serves_the_adapter_like_peft(memorized, tmp_path):
    """llama.cpp with the exported adapter says what peft says, and not what the base says."""
    adapter = export_gguf_lora(memorized.adapter_dir, tmp_path / "adapter.gguf", base=memorized.base_dir)
    assert memorized.served(memorized.gguf_path, [adapter]) == memorized.peft_text
    assert "purple" not in memorized.served(memorized.gguf_path, [])


@pytest.mark.slow
def test_llama_cpp_serves_the_merged_gguf_like_peft(memorized, tmp_path):
    """The adapter merged into the base GGUF (its q/k weights now Q8_0) says what peft says, with no adapter."""
    report = merge_into_gguf(memorized.adapter_dir, tmp_path / "student.gguf", memorized.gguf_path,
                             base=memorized.base_dir)
    assert report.merged == 2 * 30 and set(report.retyped.values()) == {"Q4_1 -> Q8_0"}
    assert memorized.served(report.out_path, []) == memorized.peft_text
    # The API runs a merged student as `model`, with no adapter: one constrained call, a grounded record.
    import crossagentie

    record = crossagentie.extract("NASA is in Houston .", schema="conll04", method="student",
                                  model=str(report.out_path), max_reasks=0)
    assert record.stats.calls == 1
    assert all(record.text[e.start:e.end] == e.text for e in record.entities)


@pytest.mark.slow
def test_llama_cpp_serves_a_soup_like_peft(memorized, tmp_path):
    """A soup of the memorized adapter and an untrained one (half its weight change, rank 16) says in llama.cpp
    what peft says with the same soup."""
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from student.soup import make_soup

    def base():
        path = memorized.gguf_path
        return AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)

    untrained = get_peft_model(base(), LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj"]))
    untrained.save_pretrained(tmp_path / "untrained")
    soup = make_soup([memorized.adapter_dir, tmp_path / "untrained"], tmp_path / "soup", base=memorized.base_dir)
    tokenizer = AutoTokenizer.from_pretrained(memorized.gguf_path.parent, gguf_file=memorized.gguf_path.name)
    prompt_ids = tokenizer(memorized.prompt, return_tensors="pt").input_ids
    model = PeftModel.from_pretrained(base(), soup).eval()
    peft_text = tokenizer.decode(model.generate(prompt_ids, max_new_tokens=6, do_sample=False)[0, prompt_ids.shape[1]:])
    assert memorized.served(memorized.gguf_path, [soup / "adapter.gguf"]) == peft_text
