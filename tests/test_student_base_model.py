"""`student.base_model`: catalogue names map to cached HF checkpoints, and (slow) the GGUF conversion is
faithful and done once."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

torch = pytest.importorskip("torch")


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
