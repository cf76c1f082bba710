"""Merge a peft LoRA adapter into the base GGUF it was trained on: one GGUF that llama.cpp serves without an
adapter, so no decoding step pays for the LoRA's extra matmuls.

    python -m student.gguf_merge runs/student [--base-gguf BASE.gguf] [--out runs/student/student.gguf] \
        [--type q8_0|f16]

Each adapted weight becomes W + (alpha / r) * B @ A, computed in fp32 on the dequantized GGUF weight (the values
the adapter was trained against, see `student.base_model`) and written as Q8_0 (default) or F16. Not in the base's
own 4- or 5-bit types: requantizing to those rounds most of a small LoRA update back onto the old grid. Every other
tensor and all metadata are copied byte for byte, so the merged file is a little larger than the base.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from student.base_model import CONVERTED_RECORD
from student.gguf_lora import ExportError, effective_alpha, gguf_tensors, lora_pairs, read_lora_config

MERGED_TYPES = ("q8_0", "f16")


@dataclass
class MergeReport:
    """What a merge wrote: the file, how many weights took the LoRA, and the types that changed."""
    out_path: Path
    base_gguf: Path
    merged: int = 0
    retyped: dict[str, str] = field(default_factory=dict)  # tensor name -> "Q4_K -> Q8_0"


def base_gguf_of(adapter_dir: Path, lora: dict[str, Any]) -> Path:
    """The GGUF the adapter's HF base was converted from (`student.base_model` records it)."""
    base = lora.get("base_model_name_or_path")
    record = Path(base or ".") / CONVERTED_RECORD
    if not base or not record.is_file():
        raise ExportError(f"{adapter_dir}: its base {base!r} was not converted from a "
                          "GGUF here; pass --base-gguf with the GGUF it was trained against")
    source = json.loads(record.read_text())["source"]
    path = Path(source["gguf"])
    if not path.is_file() or path.stat().st_size != source["size"]:
        raise ExportError(f"{record}: the base GGUF {path} is gone or changed; pass --base-gguf")
    return path


def merge_into_gguf(adapter_dir: str | Path, out_path: str | Path, base_gguf: str | Path | None = None,
                    base: str | Path | None = None, merged_type: str = "q8_0") -> MergeReport:
    """Write base GGUF + `adapter_dir`'s LoRA as one GGUF at `out_path`; `base` (HF config directory) defaults to
    the adapter's `base_model_name_or_path`, `base_gguf` to the GGUF that base was converted from."""
    import gguf
    import numpy as np
    from safetensors.torch import load_file
    from transformers import AutoConfig

    if merged_type not in MERGED_TYPES:
        raise ExportError(f"--type {merged_type!r}: choose one of {MERGED_TYPES}")
    adapter_dir, out_path = Path(adapter_dir), Path(out_path)
    lora = read_lora_config(adapter_dir)
    base_config = AutoConfig.from_pretrained(str(base or lora["base_model_name_or_path"]))
    base_gguf = Path(base_gguf) if base_gguf else base_gguf_of(adapter_dir, lora)
    reader = gguf.GGUFReader(base_gguf)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    if arch != base_config.model_type:
        raise ExportError(f"{base_gguf}: architecture {arch!r}, but the adapter was trained on "
                          f"{base_config.model_type!r}; pass the GGUF the adapter's base came from")
    scale = effective_alpha(lora) / lora["r"]
    pairs = lora_pairs(load_file(str(adapter_dir / "adapter_model.safetensors")), adapter_dir)
    deltas = {name: (a, b) for name, a, b in gguf_tensors(pairs, base_config)}
    report = MergeReport(out_path=out_path, base_gguf=base_gguf)

    writer = gguf.GGUFWriter(str(out_path), arch)
    for f in reader.fields.values():
        # GGUFWriter writes the architecture and the GGUF.* header fields itself.
        if f.name == gguf.Keys.General.ARCHITECTURE or f.name.startswith("GGUF."):
            continue
        value_type = f.types[0]
        sub_type = f.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(f.name, f.contents(), value_type, sub_type=sub_type)
    for tensor in reader.tensors:
        if tensor.name not in deltas:
            writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
            continue
        lora_a, lora_b = deltas.pop(tensor.name)
        weight = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        delta = scale * (lora_b.float() @ lora_a.float()).numpy()
        if weight.shape != delta.shape:
            raise ExportError(f"{tensor.name}: GGUF weight {weight.shape} but LoRA B @ A {delta.shape}; the adapter "
                              f"was not trained on {base_gguf}")
        qtype = gguf.GGMLQuantizationType[merged_type.upper()]
        writer.add_tensor(tensor.name, gguf.quants.quantize(weight + delta, qtype), raw_dtype=qtype)
        report.merged += 1
        if qtype != tensor.tensor_type:
            report.retyped[tensor.name] = f"{tensor.tensor_type.name} -> {qtype.name}"
    if deltas:
        raise ExportError(f"{base_gguf} has no tensor for the adapted weights {sorted(deltas)[:3]}...; the adapter "
                          "was not trained on this GGUF")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file(progress=True)
    writer.close()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m student.gguf_merge", allow_abbrev=False,
                                     description="Merge a peft LoRA adapter into its base GGUF.")
    parser.add_argument("adapter_dir", type=Path, help="directory with adapter_config.json + adapter_model.safetensors")
    parser.add_argument("--out", type=Path, help="output file (default: ADAPTER_DIR/student.gguf)")
    parser.add_argument("--base-gguf", type=Path, help="GGUF the adapter was trained against (default: the one its "
                                                       "HF base was converted from)")
    parser.add_argument("--base", type=Path, help="base model's HF directory (default: from adapter_config.json)")
    parser.add_argument("--type", choices=MERGED_TYPES, default="q8_0", dest="merged_type",
                        help="type of the merged weights")
    args = parser.parse_args(argv)
    try:
        report = merge_into_gguf(args.adapter_dir, args.out or args.adapter_dir / "student.gguf", args.base_gguf,
                                 args.base, args.merged_type)
    except ExportError as exc:
        raise SystemExit(f"student.gguf_merge: {exc}") from None
    retyped = sorted(set(report.retyped.values()))
    print(f"{report.out_path}: {report.merged} weights merged into {report.base_gguf.name}"
          + (f"; {len(report.retyped)} retyped ({', '.join(retyped)})" if retyped else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
