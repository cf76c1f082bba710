"""Merging a LoRA into its base GGUF: a random adapter over smollm2-135m's GGUF lands in the adapted weights (in
llama.cpp's row order, within the requantization's rounding), and nothing else changes. Serving the merged file
like peft is in tests/test_student_gguf_lora.py."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

torch = pytest.importorskip("torch")
gguf = pytest.importorskip("gguf")

from gguf import GGMLQuantizationType as Q  # noqa: E402

from student.gguf_lora import ExportError, llama_permute  # noqa: E402
from student.gguf_merge import merge_into_gguf  # noqa: E402

TARGETS = {"q_proj": "attn_q", "down_proj": "ffn_down"}


@pytest.fixture(scope="module")
def smollm2() -> Path:
    from ie.llm.local import model_path

    return model_path("smollm2-135m")


@pytest.fixture(scope="module")
def random_adapter(smollm2, tmp_path_factory) -> Path:
    """r=4 LoRA with random A and B (not peft's zero B) on q_proj and down_proj of smollm2's architecture."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    tmp = tmp_path_factory.mktemp("merge")
    config = AutoConfig.from_pretrained(smollm2.parent, gguf_file=smollm2.name)
    config.save_pretrained(tmp / "base")
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_config(config),
                           LoraConfig(r=4, lora_alpha=8, target_modules=list(TARGETS), init_lora_weights=False))
    model.save_pretrained(tmp / "adapter")
    return tmp / "adapter"


def tensors(path: Path) -> dict:
    return {t.name: t for t in gguf.GGUFReader(path).tensors}


def expected_weight(base_tensor, adapter: Path, layer: int, module: str):
    from safetensors.torch import load_file

    peft = load_file(str(adapter / "adapter_model.safetensors"))
    part = "self_attn" if module == "q_proj" else "mlp"
    key = f"base_model.model.model.layers.{layer}.{part}.{module}"
    a, b = peft[f"{key}.lora_A.weight"], peft[f"{key}.lora_B.weight"]
    if module == "q_proj":  # the GGUF stores llama's q rows permuted
        b = llama_permute(b, 9)
    base = gguf.quants.dequantize(base_tensor.data, base_tensor.tensor_type)
    return base, base + 2.0 * (b @ a).numpy()  # scale alpha / r


@pytest.mark.parametrize("merged_type, qtype, max_error", [("q8_0", Q.Q8_0, 0.1), ("f16", Q.F16, 0.01)])
def test_merge_adds_the_scaled_lora_and_copies_the_rest(smollm2, random_adapter, tmp_path, merged_type, qtype,
                                                        max_error):
    report = merge_into_gguf(random_adapter, tmp_path / "m.gguf", smollm2, base=random_adapter.parent / "base",
                             merged_type=merged_type)
    assert report.merged == 2 * 30
    assert len(report.retyped) == 60 and set(report.retyped.values()) == {f"Q4_1 -> {qtype.name}"}
    base, merged = tensors(smollm2), tensors(report.out_path)
    assert list(base) == list(merged)
    adapted = {f"blk.{i}.{name}.weight" for i in range(30) for name in TARGETS.values()}
    for name, tensor in base.items():
        if name not in adapted:
            assert merged[name].tensor_type == tensor.tensor_type
            assert bytes(merged[name].data) == bytes(tensor.data), name
    for layer in (0, 29):
        for module, name in TARGETS.items():
            out = merged[f"blk.{layer}.{name}.weight"]
            assert out.tensor_type == qtype
            before, target = expected_weight(base[f"blk.{layer}.{name}.weight"], random_adapter, layer, module)
            got = gguf.quants.dequantize(out.data, out.tensor_type)
            error = float(((got - target) ** 2).sum() ** 0.5 / ((target - before) ** 2).sum() ** 0.5)
            assert error < max_error, (name, error)
    base_fields = gguf.GGUFReader(smollm2).fields
    merged_fields = gguf.GGUFReader(report.out_path).fields
    for key, field in base_fields.items():
        if not key.startswith("GGUF."):
            assert merged_fields[key].contents() == field.contents(), key


def test_a_gguf_of_another_architecture_is_refused(random_adapter, tmp_path):
    from transformers import AutoConfig

    qwen = AutoConfig.for_model("qwen2", vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2)
    qwen.save_pretrained(tmp_path / "qwen")
    from ie.llm.local import model_path

    with pytest.raises(ExportError, match="architecture 'llama', but the adapter was trained on 'qwen2'"):
        merge_into_gguf(random_adapter, tmp_path / "m.gguf", model_path("smollm2-135m"), base=tmp_path / "qwen")


def test_a_base_not_converted_from_a_gguf_needs_base_gguf(random_adapter, tmp_path):
    with pytest.raises(ExportError, match="pass --base-gguf"):
        merge_into_gguf(random_adapter, tmp_path / "m.gguf", base=random_adapter.parent / "base")
