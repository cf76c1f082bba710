"""The student's base model: an HF id or directory as is, or a GGUF (embedded catalogue name or .gguf file)
turned into a plain HF checkpoint once and cached under `cache_dir()/hf/<name>`.

transformers reads GGUF (`gguf_file=`) by dequantizing every tensor, but a model loaded that way refuses
`save_pretrained`, and reloading the GGUF for every run costs time. So the conversion builds a plain model from
the GGUF's config (without its `quantization_config`), loads the dequantized state dict into it and saves that,
with the tokenizer (also read from the GGUF). Weights stay fp32: they are exactly the values llama.cpp serves, so
an adapter trained on them transfers to the GGUF base (see `student.gguf_lora`).
"""
from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

from ie.config import cache_dir

log = logging.getLogger(__name__)
CONVERTED_RECORD = "converted_from.json"


def resolve_base_model(name: str) -> str:
    """A path or id `from_pretrained` can load offline: HF directories and ids pass through; GGUF files and
    embedded catalogue names are converted (once) and their cached directory returned."""
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path)
    is_gguf_file = path.suffix.lower() == ".gguf"
    if is_gguf_file or _is_catalogue_name(name):
        from ie.llm.local import model_path

        # Catalogue names contain dots ("qwen2.5-coder-0.5b"): only a .gguf file name loses its suffix.
        cached = cache_dir() / "hf" / (path.stem if is_gguf_file else name)
        return str(ensure_hf_checkpoint(model_path(name), cached))
    return name


def _is_catalogue_name(name: str) -> bool:
    from ie.llm.local import load_catalogue

    return name in load_catalogue().models


def ensure_hf_checkpoint(gguf_path: Path, out_dir: Path) -> Path:
    """`out_dir`, converted from `gguf_path` unless a previous conversion of the same file is already there."""
    gguf_path = Path(gguf_path)
    stat = gguf_path.stat()
    source = {"gguf": str(gguf_path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    record = out_dir / CONVERTED_RECORD
    if record.is_file() and json.loads(record.read_text()).get("source") == source:
        return out_dir
    # Write beside the target and rename, so an interrupted conversion never looks finished.
    tmp_dir = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    started = time.perf_counter()
    convert_gguf_to_hf(gguf_path, tmp_dir)
    seconds = time.perf_counter() - started
    size = sum(f.stat().st_size for f in tmp_dir.rglob("*") if f.is_file())
    (tmp_dir / CONVERTED_RECORD).write_text(json.dumps(
        {"source": source, "seconds": round(seconds, 1), "bytes": size}, indent=2))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp_dir.rename(out_dir)
    log.info("converted %s -> %s in %.1fs (%.0f MB)", gguf_path, out_dir, seconds, size / 1e6)
    return out_dir


def convert_gguf_to_hf(gguf_path: Path, out_dir: Path) -> Path:
    """Write a plain fp32 HF checkpoint (model + tokenizer) of a GGUF file to `out_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    dequantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = dequantized.config
    del config.quantization_config
    config.name_or_path = str(out_dir)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(dequantized.state_dict())
    model.generation_config = dequantized.generation_config
    del dequantized
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
