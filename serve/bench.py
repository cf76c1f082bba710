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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ie.cli import add_flags, from_sources, opt
from ie.config import REPO_ROOT, ConfigError, load_config, resolve_config_path
from ie.logs import add_verbose_flag, setup_logging


@dataclass
class BenchConfig:
    config: str = opt("configs/conll04.yaml", "dataset config (schema, splits, bench: section), or just its name")
    split: str = opt("dev", "dataset split the methods are compared on")
    limit: int | None = opt(50, "compare on the first N sentences of the split (after --offset)")
    offset: int = opt(0, "skip the first N sentences (a fresh slice after the ones settings were chosen on)")
    methods: list[str] = opt(["direct", "type-agents", "crossagentie"],
                             "comma-separated methods: teacher methods (teacher.methods) and/or student")
    model: str | None = opt(None, "teacher's embedded llama.cpp model: catalogue name or GGUF path")
    endpoint: str | None = opt(None, "teacher's OpenAI-compatible base URL (instead of the embedded server)")
    model_name: str | None = opt(None, "model name at --endpoint")
    api_key_env: str | None = opt(None, "NAME of the env var holding --endpoint's API key")
    student_adapter: str | None = opt(None, "student's GGUF LoRA adapter, served on the embedded server")
    student_base: str = opt("qwen2.5-coder-0.5b", "base model of --student-adapter (catalogue name or GGUF)")
    student_endpoint: str | None = opt(None, "student's OpenAI-compatible base URL (e.g. vLLM)")
    student_model: str = opt("student", "model or adapter name at --student-endpoint")
    concurrency: int = opt(1, "sentences in flight at once (match the server's parallel slots)")
    threads: int | None = opt(None, "CPU threads of an embedded server (default: all cores)")
    price_as: str | None = opt(None, "price the rows at this bench.prices entry's $ per 1M tokens")
    out: str = opt("runs/bench", "output folder (bench.json, bench.md, bench.png, rows/)")
    fresh: bool = opt(False, "re-run every method and bypass the call cache, so latencies are real")
    overhead: bool = opt(False, "replay each teacher method's fresh calls as plain requests: the toolkit's cost")

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
    add_flags(p, BenchConfig)
    add_verbose_flag(p)
    return p


def load_bench_config(args: dict[str, Any]) -> tuple[BenchConfig, Any]:
    """The config file's `bench:` section (its `prices:` table aside), then the flags given."""
    path = resolve_config_path(args.get("config") or BenchConfig.config)
    dataset = load_config(path)
    cfg = from_sources(BenchConfig, "bench", dataset.section("bench"), {**args, "config": str(path)}, path,
                       reserved=("prices",))
    return cfg, dataset


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
