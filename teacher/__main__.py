"""Label records with the multi-agent teacher (or a baseline).

    python -m teacher run --config configs/conll04.yaml --split dev --method crossagentie --limit 50 \\
        --out runs/crossagentie [--model qwen2.5-coder-0.5b | --endpoint URL --model-name M --api-key-env VAR]

Settings: the config file's `teacher:` section, then these flags. Writes predictions.jsonl, config.json and,
with gold, metrics.json and report.md into --out; a re-run with the same flags resumes. Records that failed
(no answer from the endpoint, or past their time budget) are listed in failures.jsonl instead, and the run
exits 1 with one line saying how many, why, and the command that retries them.
"""
from __future__ import annotations

import argparse
import logging
import shlex
import sys
import types
import typing

from teacher.config import TeacherConfig, cli_fields


def _flag_type(hint: object) -> type:
    """`int | None` -> int; the flag's parser type."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] if isinstance(hint, types.UnionType) else []
    return args[0] if args else hint  # type: ignore[return-value]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m teacher", description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="label records into an output folder", allow_abbrev=False)
    hints = typing.get_type_hints(TeacherConfig)
    for name, default, help_text in cli_fields():
        flag, kind = "--" + name.replace("_", "-"), _flag_type(hints[name])
        if kind is bool:
            run.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                             help=f"{help_text} (default {default})")
        else:
            run.add_argument(flag, type=kind, default=None, help=f"{help_text} (default {default})")
    return parser


def main(argv: list[str] | None = None) -> int:
    from ie.config import ConfigError, load_config, resolve_config_path
    from ie.failures import IncompleteRun

    argv = sys.argv[1:] if argv is None else argv
    args = vars(build_parser().parse_args(argv))
    args.pop("command")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        path = resolve_config_path(args["config"] or TeacherConfig.config)
        args["config"] = str(path)
        cfg = TeacherConfig.from_sources(load_config(path).section("teacher"), args)
        from teacher.runner import run

        out = run(cfg)
    except IncompleteRun as exc:
        print(f"error: {exc.summary('python -m teacher ' + shlex.join(argv))}", file=sys.stderr)
        return 1
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
