"""Label records with the multi-agent teacher (or a baseline).

    python -m teacher run --config configs/conll04.yaml --split dev --method crossagentie --limit 50 \\
        --out runs/crossagentie [--model qwen2.5-coder-0.5b | --endpoint URL --model-name M --api-key-env VAR]

Settings: the config file's `teacher:` section, then these flags. Writes predictions.jsonl, config.json and,
with gold, metrics.json and report.md into --out; a re-run with the same flags resumes. Records that failed
(no answer from the endpoint or none that validated, or past their time budget) are listed in failures.jsonl
instead, and the run exits 1 with one line saying how many, why, and the command that retries them; so does
a run that stops early (a full disk, an endpoint that answers nothing) or is interrupted (Ctrl-C). A second
run on a folder another run is writing is refused (exit 2), naming that run. Every run ends with a short
summary on stdout: records labelled and failed, NER/RE F1 when there is gold, calls and tokens a record, and
where report.md is. Library log lines (httpx, openai) show only with --verbose.
"""
from __future__ import annotations

import argparse
import shlex
import sys

from ie.cli import add_flags, report_stop, sigterm_as_interrupt
from ie.logs import add_verbose_flag, setup_logging
from teacher.config import TeacherConfig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m teacher", description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="label records into an output folder", allow_abbrev=False)
    add_flags(run, TeacherConfig)
    add_verbose_flag(run)
    return parser


def summary(cfg: TeacherConfig, failed: int) -> str:
    """The run folder's outcome for the configured records (those labelled by earlier runs of it included)."""
    from ie.config import resolve_config_path
    from ie.scoring import Scores
    from ie.summary import RunSummary
    from teacher.runner import PREDICTIONS, finished, load_records

    out = cfg.out_dir
    records, _ = load_records(cfg, resolve_config_path(cfg.config))
    scored = (out / "metrics.json").exists() and not failed
    metrics = Scores.model_validate_json((out / "metrics.json").read_text(encoding="utf-8")) if scored else None
    outputs = {"report": out / "report.md"} if scored else {}
    return RunSummary.of(f"teacher {cfg.method}", len(records), finished(out / PREDICTIONS, records), failed,
                         metrics, {**outputs, "predictions": out / PREDICTIONS}).text()


def main(argv: list[str] | None = None) -> int:
    from ie.config import ConfigError, load_config, resolve_config_path
    from ie.failures import IncompleteRun
    from ie.runlock import FolderBusy

    argv = sys.argv[1:] if argv is None else argv
    args = vars(build_parser().parse_args(argv))
    args.pop("command")
    setup_logging(args.pop("verbose"))
    try:
        path = resolve_config_path(args["config"] or TeacherConfig.config)
        args["config"] = str(path)
        cfg = TeacherConfig.from_sources(load_config(path).section("teacher"), args, path)
        from teacher.runner import run

        with sigterm_as_interrupt():
            run(cfg)
        print(summary(cfg, failed=0))
    except IncompleteRun as exc:
        print(summary(cfg, failed=len(exc.failures)))
        print(f"error: {exc.summary('python -m teacher ' + shlex.join(argv))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        return report_stop(exc, "the finished records are kept", f"python -m teacher {shlex.join(argv)}")
    except (ConfigError, FileNotFoundError, ValueError, FolderBusy) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
