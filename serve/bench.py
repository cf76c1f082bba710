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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ie.config import REPO_ROOT, ConfigError, load_config, resolve_config_path


@dataclass
class BenchConfig:
    config: str = "configs/conll04.yaml"
    split: str = "dev"
    limit: int | None = 50
    methods: list[str] = field(default_factory=lambda: ["direct", "type-agents", "crossagentie"])
    model: str | None = None
    endpoint: str | None = None
    model_name: str | None = None
    api_key_env: str | None = None
    student_adapter: str | None = None
    student_base: str = "qwen2.5-coder-0.5b"
    student_endpoint: str | None = None
    student_model: str = "student"
    concurrency: int = 1
    threads: int | None = None  # CPU threads of an embedded server (default: all cores)
    price_as: str | None = None
    out: str = "runs/bench"
    fresh: bool = False
    overhead: bool = False

    def __post_init__(self) -> None:
        if "student" in self.methods and not (self.student_adapter or self.student_endpoint):
            raise ConfigError("bench.methods: 'student' needs --student-adapter PATH.gguf or --student-endpoint URL")
        if self.endpoint and not self.model_name:
            raise ConfigError("bench.model_name: --endpoint needs --model-name")
        if self.concurrency < 1:
            raise ConfigError(f"bench.concurrency: must be at least 1, got {self.concurrency}")

    def settings_key(self, method: str) -> dict[str, Any]:
        """What a reusable row must have been measured with: the settings, and the content of everything that
        decides its labels (dataset config, prompts and code; the student's adapter file)."""
        keep = ("config", "split", "limit", "concurrency", "model", "endpoint", "model_name")
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
        name, flag, default = f.name, "--" + f.name.replace("_", "-"), f.default
        if isinstance(default, bool):
            p.add_argument(flag, action="store_true", default=None)
        elif name == "methods":
            p.add_argument(flag, type=lambda s: [m.strip() for m in s.split(",") if m.strip()], default=None)
        else:
            p.add_argument(flag, type=int if name in ("limit", "concurrency", "threads") else str, default=None)
    return p


def load_bench_config(args: dict[str, Any]) -> tuple[BenchConfig, Any]:
    path = resolve_config_path(args.get("config") or BenchConfig.config)
    dataset = load_config(path)
    section = {k: v for k, v in dataset.section("bench").items() if k != "prices"}
    merged = {**section, **{k: v for k, v in args.items() if v is not None}, "config": str(path)}
    return BenchConfig(**merged), dataset


def main(argv: Sequence[str] | None = None) -> int:
    from ie.failures import IncompleteRun

    argv = sys.argv[1:] if argv is None else list(argv)
    args = vars(build_parser().parse_args(argv))
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
    print((out / "bench.md").read_text(encoding="utf-8"))
    print(f"wrote {out}/bench.json, bench.md, bench.png")
    return 0


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def elapsed(started: float) -> float:
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
