"""Serve the base model with one or more student LoRA adapters on vLLM (GPU).

    python -m serve.vllm --base Qwen/Qwen2.5-Coder-0.5B-Instruct --adapter student=runs/student/adapter \
        [--adapter b=PATH2] [--port 8000] [--tensor-parallel-size N] [--data-parallel-size N] [--print] [-- EXTRA...]

builds and runs `vllm serve BASE --enable-lora --lora-modules student=PATH ... --max-lora-rank R --max-loras N`.
R is the largest rank in the adapters' `adapter_config.json` (`r` and any `rank_pattern`), rounded up to a rank
vLLM accepts; N is the number of adapters. `--print` shows the command and runs nothing. Anything after `--`
goes to vLLM as is (e.g. `-- --max-model-len 4096`). Clients pick an adapter by its name as `model`.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# vllm.config.lora.MaxLoRARanks (checked against the vLLM docs, v0.14 to v0.22).
SUPPORTED_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

STRUCTURED_OUTPUT_NOTES = """\
Structured output on vLLM >= 0.12:
- `response_format={"type": "json_schema", "json_schema": {"name": ..., "schema": ...}}` (what serve.client sends);
- or `extra_body={"structured_outputs": {"json": schema}}`; the old `guided_json` field was removed in 0.12.
Pick an adapter per request with `model="<adapter name>"`; the base model answers to its own name."""


class VllmError(ValueError):
    """A bad adapter or flag; the message names the file or flag and the fix."""


@dataclass(frozen=True)
class ServeSpec:
    base: str
    adapters: dict[str, Path]  # LoRA name (what clients send as `model`) -> PEFT adapter directory
    host: str = "127.0.0.1"
    port: int = 8000
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    extra: list[str] = field(default_factory=list)


def parse_adapter(spec: str) -> tuple[str, Path]:
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise VllmError(f"--adapter {spec!r}: expected NAME=PATH (e.g. student=runs/student/adapter)")
    return name, Path(path)


def adapter_rank(adapter_dir: Path) -> int:
    """The largest LoRA rank of a PEFT adapter (`r`, and any per-module `rank_pattern` override)."""
    cfg_path = adapter_dir / "adapter_config.json"
    if adapter_dir.suffix.lower() == ".gguf":
        raise VllmError(f"{adapter_dir}: a GGUF adapter is for llama.cpp (serve.local); vLLM needs the PEFT "
                        "adapter directory (adapter_config.json + adapter_model.safetensors)")
    if not cfg_path.is_file():
        raise VllmError(f"{cfg_path}: not found; --adapter must point to a PEFT adapter directory")
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        ranks = [int(cfg["r"]), *(int(v) for v in (cfg.get("rank_pattern") or {}).values())]
    except (ValueError, KeyError, TypeError) as exc:
        raise VllmError(f"{cfg_path}: field 'r': missing or not an integer ({exc})") from None
    return max(ranks)


def supported_rank(rank: int) -> int:
    """The smallest rank vLLM accepts that is >= `rank`."""
    for allowed in SUPPORTED_LORA_RANKS:
        if allowed >= rank:
            return allowed
    raise VllmError(f"LoRA rank {rank} exceeds vLLM's largest --max-lora-rank {SUPPORTED_LORA_RANKS[-1]}; "
                    "retrain the adapter with a smaller r")


def build_command(spec: ServeSpec, ranks: dict[str, int]) -> list[str]:
    """The `vllm serve` argv for `spec`, given each adapter's rank. Pure."""
    if not spec.adapters:
        raise VllmError("no --adapter given: pass at least one NAME=PATH")
    if spec.tensor_parallel_size < 1 or spec.data_parallel_size < 1:
        raise VllmError("--tensor-parallel-size and --data-parallel-size must be >= 1")
    cmd = ["vllm", "serve", spec.base, "--host", spec.host, "--port", str(spec.port), "--enable-lora",
           "--lora-modules", *(f"{name}={path}" for name, path in spec.adapters.items()),
           "--max-lora-rank", str(supported_rank(max(ranks[n] for n in spec.adapters))),
           "--max-loras", str(len(spec.adapters))]
    if spec.tensor_parallel_size > 1:
        cmd += ["--tensor-parallel-size", str(spec.tensor_parallel_size)]
    if spec.data_parallel_size > 1:
        cmd += ["--data-parallel-size", str(spec.data_parallel_size)]
    return cmd + list(spec.extra)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m serve.vllm", description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--base", required=True, help="base model: HF id or directory the adapters were trained on")
    p.add_argument("--adapter", action="append", default=[], metavar="NAME=PATH",
                   help="a PEFT LoRA adapter directory served under NAME; repeatable")
    p.add_argument("--host", default="127.0.0.1", help="bind address (0.0.0.0 to serve other machines)")
    p.add_argument("--port", type=int, default=8000, help="port the OpenAI-compatible server listens on")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="GPUs per model replica")
    p.add_argument("--data-parallel-size", type=int, default=1, help="model replicas")
    p.add_argument("--print", action="store_true", help="print the command and exit")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="after `--`: passed to vllm serve unchanged")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        pairs = [parse_adapter(a) for a in args.adapter]
        adapters = dict(pairs)
        if len(adapters) != len(pairs):
            raise VllmError("two --adapter flags use the same NAME; give each adapter its own name")
        extra = args.extra[1:] if args.extra[:1] == ["--"] else args.extra
        spec = ServeSpec(args.base, adapters, args.host, args.port, args.tensor_parallel_size,
                         args.data_parallel_size, extra)
        cmd = build_command(spec, {name: adapter_rank(path) for name, path in adapters.items()})
    except VllmError as exc:
        raise SystemExit(f"serve.vllm: {exc}") from None
    print(shlex.join(cmd))
    print(STRUCTURED_OUTPUT_NOTES, file=sys.stderr)
    if args.print:
        return 0
    if shutil.which("vllm") is None:
        raise SystemExit("serve.vllm: `vllm` is not on PATH; install it on the GPU machine: pip install -e '.[gpu]'")
    os.execvp(cmd[0], cmd)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
