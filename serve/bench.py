"""Every method on the same sentences, side by side: F1, calls, tokens, latency, throughput and $.

    python -m serve.bench --config configs/conll04.yaml --split dev --limit 50 \\
        --methods direct,type-agents,crossagentie,student --student-adapter runs/student/adapter.gguf

Teacher methods run on the teacher endpoint (default: the catalogue's default teacher, `qwen2.5-coder-1.5b`);
`student` runs the student's template (`ie.student_format`) against the student (`--student-adapter` GGUF LoRA on
the embedded server, or `--student-endpoint URL --student-model NAME`, e.g. vLLM). Writes `bench.json`, `bench.md`
and `bench.png` into --out. A method's row is kept in `rows/<method>.json` and reused by a later bench with the
same settings (its numbers came from that earlier, timed run); `--fresh` bypasses the call cache so latencies are
real, and keeps only rows and records measured that way (a stopped fresh bench resumes; delete rows/ to measure
again). `--overhead` also replays each teacher method's fresh calls straight to the server as
plain requests of the same token sizes: the gap in wall time is what the toolkit's orchestration costs.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from ie.cli import add_flags, from_sources, report_stop, sigterm_as_interrupt
from ie.config import ConfigError, load_config, resolve_config_path
from ie.logs import add_verbose_flag, setup_logging
from ie.runlock import FolderBusy, RunLock
from serve.bench_config import BenchConfig


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
    from ie.llm.types import RunStopped

    argv = sys.argv[1:] if argv is None else list(argv)
    command = f"python -m serve.bench {shlex.join(argv)}"
    args = vars(build_parser().parse_args(argv))
    setup_logging(args.pop("verbose"))
    try:
        cfg, dataset = load_bench_config(args)
        from serve.bench_run import run_bench

        with RunLock(cfg.out), sigterm_as_interrupt():
            out = asyncio.run(run_bench(cfg, dataset))
    except IncompleteRun as exc:
        print(f"error: no bench table: {exc.summary(command)}", file=sys.stderr)
        return 1
    except RunStopped as exc:
        print(f"error: no bench table: run stopped: {exc}; to resume, run again: {command}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        return report_stop(exc, "no bench table; each method's finished records are kept in its rows/ file",
                           command)
    except (ConfigError, FileNotFoundError, ValueError, FolderBusy) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from serve.bench_report import summary_lines

    print("\n".join(summary_lines(json.loads((out / "bench.json").read_text(encoding="utf-8")), out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
