"""Export a peft LoRA adapter as a llama.cpp GGUF LoRA adapter, so the student is served on CPU as base GGUF +
adapter behind the same OpenAI protocol (`ie.llm.local.LocalServer(model, lora=[adapter.gguf])`).

    python -m student.gguf_lora runs/student [--out runs/student/adapter.gguf] [--base DIR] [--dtype f16]

Layout (as llama.cpp's convert_lora_to_gguf.py writes and llama-adapter.cpp reads): `general.type = adapter`,
`adapter.type = lora`, `adapter.lora.alpha`, and per adapted weight `<gguf name>.lora_a` (peft's A, rank x in)
and `.lora_b` (peft's B, out x rank), e.g. `blk.0.attn_q.weight.lora_a`. llama.cpp scales by alpha / rank, as
peft does. For llama, the GGUF stores q/k weights with rows permuted for its rotary layout, so B of q_proj and
k_proj gets the same row permutation; qwen2 uses the NEOX layout and needs none.
"""
from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

SUPPORTED_ARCHS = ("llama", "qwen2")  # HF model_type == GGUF architecture name for both
PEFT_PREFIX = "base_model.model."


class ExportError(ValueError):
    """The adapter cannot be expressed as a llama.cpp LoRA; the message names the setting and the fix."""


def llama_permute(weight: torch.Tensor, n_head: int, n_head_kv: int | None = None) -> torch.Tensor:
    """HF -> GGUF row order of a llama q/k projection (convert_hf_to_gguf.py's `LlamaModel.permute`)."""
    heads = n_head_kv if n_head_kv is not None and n_head_kv != n_head else n_head
    return (weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def export_gguf_lora(adapter_dir: str | Path, out_path: str | Path, base: str | Path | None = None,
                     dtype: str = "f32") -> Path:
    """Write `adapter_dir`'s LoRA to `out_path`; `base` (HF config directory) defaults to the adapter's
    `base_model_name_or_path`."""
    import gguf
    from safetensors.torch import load_file
    from transformers import AutoConfig

    adapter_dir, out_path = Path(adapter_dir), Path(out_path)
    lora = read_lora_config(adapter_dir)
    base_config = AutoConfig.from_pretrained(str(base or lora["base_model_name_or_path"]))
    arch = base_config.model_type
    if arch not in SUPPORTED_ARCHS:
        raise ExportError(f"{adapter_dir}: base architecture {arch!r} is not supported; export a merged model "
                          f"(--merge) with llama.cpp's convert_hf_to_gguf.py instead (supported: {SUPPORTED_ARCHS})")
    pairs = lora_pairs(load_file(str(adapter_dir / "adapter_model.safetensors")), adapter_dir)
    np_dtype = {"f32": "float32", "f16": "float16"}[dtype]
    writer = gguf.GGUFWriter(str(out_path), arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, effective_alpha(lora))
    for name, lora_a, lora_b in gguf_tensors(pairs, base_config):
        writer.add_tensor(f"{name}.lora_a", lora_a.float().numpy().astype(np_dtype))
        writer.add_tensor(f"{name}.lora_b", lora_b.float().numpy().astype(np_dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_path


def read_lora_config(adapter_dir: Path) -> dict[str, Any]:
    path = adapter_dir / "adapter_config.json"
    if not path.is_file():
        raise ExportError(f"{adapter_dir}: no adapter_config.json; pass the directory a peft adapter was saved to")
    lora = json.loads(path.read_text())
    unsupported = {
        "peft_type": lora.get("peft_type") != "LORA",
        "use_dora": bool(lora.get("use_dora")),
        "rank_pattern": bool(lora.get("rank_pattern")),
        "alpha_pattern": bool(lora.get("alpha_pattern")),
        "modules_to_save": bool(lora.get("modules_to_save")),
    }
    for key, bad in unsupported.items():
        if bad:
            raise ExportError(f"{path}: {key}={lora.get(key)!r} has no llama.cpp LoRA equivalent; train a plain "
                              "LoRA (one rank and alpha, no DoRA, no modules_to_save) or export a merged model")
    return lora


def effective_alpha(lora: dict[str, Any]) -> float:
    """llama.cpp always scales by alpha / r; rsLoRA's alpha / sqrt(r) is the same scale with alpha * sqrt(r)."""
    alpha = float(lora["lora_alpha"])
    return alpha * math.sqrt(lora["r"]) if lora.get("use_rslora") else alpha


def lora_pairs(weights: dict[str, torch.Tensor], adapter_dir: Path) -> dict[str, tuple[torch.Tensor, ...]]:
    """{"model.layers.0.self_attn.q_proj": (A, B)} from peft's saved tensor names."""
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in weights.items():
        module, _, kind = key.removeprefix(PEFT_PREFIX).rpartition(".lora_")
        if kind not in ("A.weight", "B.weight"):
            raise ExportError(f"{adapter_dir}: unexpected adapter tensor {key!r}; only LoRA A/B weights of linear "
                              "layers can be exported (no embedding LoRA, no saved modules)")
        pairs.setdefault(module, {})[kind[0]] = tensor
    return {module: (ab["A"], ab["B"]) for module, ab in sorted(pairs.items())}


def gguf_tensors(pairs: dict[str, tuple[torch.Tensor, ...]], base_config: Any):
    """(GGUF weight name, lora_a, lora_b) per adapted layer, in llama.cpp's tensor layout."""
    import gguf

    arch = base_config.model_type
    arch_id = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch)
    name_map = gguf.get_tensor_name_map(arch_id, base_config.num_hidden_layers)
    for module, (lora_a, lora_b) in pairs.items():
        name = name_map.get_name(module)
        if name is None or not name.startswith("blk."):
            raise ExportError(f"LoRA on {module!r} has no llama.cpp counterpart for {arch}; restrict "
                              "lora_target_modules to the attention and MLP projections")
        if arch == "llama" and module.endswith(("q_proj", "k_proj")):
            n_kv = base_config.num_key_value_heads if module.endswith("k_proj") else None
            lora_b = llama_permute(lora_b, base_config.num_attention_heads, n_kv)
        yield f"{name}.weight", lora_a.contiguous(), lora_b.contiguous()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Export a peft LoRA adapter as a llama.cpp GGUF LoRA adapter.",
                                     allow_abbrev=False)
    parser.add_argument("adapter_dir", type=Path, help="directory with adapter_config.json + adapter_model.safetensors")
    parser.add_argument("--out", type=Path, help="output file (default: ADAPTER_DIR/adapter.gguf)")
    parser.add_argument("--base", type=Path, help="base model's HF directory (default: from adapter_config.json)")
    parser.add_argument("--dtype", choices=("f32", "f16"), default="f32", help="tensor type of A and B")
    args = parser.parse_args(argv)
    out = export_gguf_lora(args.adapter_dir, args.out or args.adapter_dir / "adapter.gguf", args.base, args.dtype)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
