"""Every method on the same sentences, side by side: F1, calls, tokens, latency, throughput and $.

    python -m serve.bench --config configs/conll04.yaml --split dev --limit 50 \\
        --methods direct,type-agents,crossagentie,student --student-adapter runs/student/adapter.gguf

Teacher methods run on the teacher endpoint (default: the embedded `qwen2.5-coder-0.5b`); `student` runs the
distill template against the student (`--student-adapter` GGUF LoRA on the embedded server, or
`--student-endpoint URL --student-model NAME`, e.g. vLLM). Writes `bench.json`, `bench.md` and `bench.png`
into --out. A method's row is kept in `rows/<method>.json` and reused by a later bench with the same settings
(its numbers came from that earlier, timed run); `--fresh` re-runs everything and bypasses the call cache so
latencies are real. `--overhead` also replays each teacher method's fresh calls straight to the server as
plain requests of the same token sizes: the gap in wall time is what the toolkit's orchestration costs.
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from ie.config import REPO_ROOT, ConfigError, load_config, resolve_config_path
from ie.logs import add_verbose_flag, setup_logging


def _opt(default: Any, help: str) -> Any:
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass
class BenchConfig:
    config: str = _opt("configs/conll04.yaml", "dataset config (schema, splits, bench: section), or just its name")
    split: str = _opt("dev", "dataset split the methods are compared on")
    limit: int | None = _opt(50, "compare on the first N sentences of the split (after --offset)")
    offset: int = _opt(0, "skip the first N sentences (a fresh slice after the ones settings were chosen on)")
    methods: list[str] = _opt(["direct", "type-agents", "crossagentie"],
                              "comma-separated methods: teacher methods (teacher.methods) and/or student")
    model: str | None = _opt(None, "teacher's embedded llama.cpp model: catalogue name or GGUF path")
    endpoint: str | None = _opt(None, "teacher's OpenAI-compatible base URL (instead of the embedded server)")
    model_name: str | None = _opt(None, "model name at --endpoint")
    api_key_env: str | None = _opt(None, "NAME of the env var holding --endpoint's API key")
    student_adapter: str | None = _opt(None, "student's GGUF LoRA adapter, served on the embedded server")
    student_base: str = _opt("qwen2.5-coder-0.5b", "base model of --student-adapter (catalogue name or GGUF)")
    student_endpoint: str | None = _opt(None, "student's OpenAI-compatible base URL (e.g. vLLM)")
    student_model: str = _opt("student", "model or adapter name at --student-endpoint")
    concurrency: int = _opt(1, "sentences in flight at once (match the server's parallel slots)")
    threads: int | None = _opt(None, "CPU threads of an embedded server (default: all cores)")
    price_as: str | None = _opt(None, "price the rows at this bench.prices entry's $ per 1M tokens")
    out: str = _opt("runs/bench", "output folder (bench.json, bench.md, bench.png, rows/)")
    fresh: bool = _opt(False, "re-run every method and bypass the call cache, so latencies are real")
    overhead: bool = _opt(False, "replay each teacher method's fresh calls as plain requests: the toolkit's cost")

    def __post_init__(self) -> None:
        if "student" in self.methods and not (self.student_adapter or self.student_endpoint):
            raise ConfigError("bench.methods: 'student' needs --student-adapter PATH.gguf or --student-endpoint URL")
        if self.endpoint and not self.model_name:
            raise ConfigError("bench.model_name: --endpoint needs --model-name")
        if self.offset < 0:
            raise ConfigError(f"bench.offset: must be 0 or more, got {self.offset}")
        if self.concurrency < 1:
            raise ConfigError(f"bench.concurrency: must be at least 1, got {self.concurrency}")

    def settings_key(self, method: str) -> dict[str, Any]:
        """What a reusable row must have been measured with: the settings, and the content of everything that
        decides its labels (dataset config, prompts and code; the student's adapter file)."""
        keep = ("config", "split", "offset", "limit", "concurrency", "model", "endpoint", "model_name")
        key = {k: getattr(self, k) for k in keep}
        key["inputs_sha256"] = self._digests["inputs"]
        if method == "student":
            key.update(student_adapter=self.student_adapter, student_base=self.student_base,
                       student_endpoint=self.student_endpoint, student_model=self.student_model,
                       student_sha256=self._digests["student"])
        return key

    @functools.cached_property
    def _digests(self) -> dict[str, str]:
        """Read once per bench: the files are hashed as they were when it started."""
        code = sorted(p for d in LABELLING_CODE for p in (REPO_ROOT / d).rglob("*") if p.suffix in (".py", ".txt"))
        student = [REPO_ROOT / "serve" / "client.py"]  # the student's sampling settings
        if self.student_adapter:
            student.append(Path(self.student_adapter))
        return {"inputs": files_digest([Path(self.config), *code]), "student": files_digest(student)}


LABELLING_CODE = ("ie", "teacher", "distill")


def files_digest(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m serve.bench", description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in fields(BenchConfig):
        name, flag, help_text = f.name, "--" + f.name.replace("_", "-"), f.metadata["help"]
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        help_text += f" (default {','.join(default) if isinstance(default, list) else default})"
        if isinstance(default, bool):
            p.add_argument(flag, action="store_true", default=None, help=help_text)
        elif name == "methods":
            p.add_argument(flag, type=lambda s: [m.strip() for m in s.split(",") if m.strip()], default=None,
                           help=help_text)
        else:
            numeric = name in ("limit", "offset", "concurrency", "threads")
            p.add_argument(flag, type=int if numeric else str, default=None, help=help_text)
    add_verbose_flag(p)
    return p


def load_bench_config(args: dict[str, Any]) -> tuple[BenchConfig, Any]:
    """The config file's `bench:` section (its `prices:` table aside), then the flags given."""
    path = resolve_config_path(args.get("config") or BenchConfig.config)
    dataset = load_config(path)
    section = {k: v for k, v in dataset.section("bench").items() if k != "prices"}
    known = {f.name for f in fields(BenchConfig)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise ConfigError(f"{path}: bench.{unknown[0]}: unknown setting; known: {sorted(known | {'prices'})}")
    merged = {**section, **{k: v for k, v in args.items() if v is not None and k in known}, "config": str(path)}
    return BenchConfig(**merged), dataset


def main(argv: Sequence[str] | None = None) -> int:
    from ie.failures import IncompleteRun

    argv = sys.argv[1:] if argv is None else list(argv)
    args = vars(build_parser().parse_args(argv))
    setup_logging(args.pop("verbose"))
    try:
        cfg, dataset = load_bench_config(args)
        from serve.bench_run import run_bench

        out = asyncio.run(run_bench(cfg, dataset))
    except IncompleteRun as exc:
        print(f"error: no bench table: {exc.summary('python -m serve.bench ' + shlex.join(argv))}", file=sys.stderr)
        return 1
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from serve.bench_report import summary_lines

    print("\n".join(summary_lines(json.loads((out / "bench.json").read_text(encoding="utf-8")), out)))
    return 0


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def elapsed(started: float) -> float:
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
