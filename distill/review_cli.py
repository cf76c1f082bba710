"""Review teacher labels in Label Studio before distilling them (`distill.review`).

    python -m distill review export runs/teacher --out review/tasks.json [--sample 50 --lowest-confidence]
    python -m distill review import review/export.json --out review/reviewed.jsonl
    python -m distill --teacher runs/teacher --config conll04 --out runs/student/data --reviewed review/reviewed.jsonl

`export` writes the tasks (the teacher's mentions and relations as pre-annotations with their confidences) and,
beside them, the labelling config (`tasks.xml`) and the queue as a viewer page with the debates (`tasks.html`):
create a Label Studio project with that config, import the tasks, correct them, and export the project as JSON.
`import` reads that export back into records.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m distill review", description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="a teacher run as Label Studio tasks, and their labelling config")
    export.add_argument("run", type=Path, help="teacher output folder (has predictions.jsonl and config.json)")
    export.add_argument("--out", type=Path, required=True, help="tasks JSON to write (the config goes beside, .xml)")
    export.add_argument("--config", help="dataset config (default: the one the run used)")
    export.add_argument("--sample", type=int, help="review only this many records (default: all)")
    export.add_argument("--lowest-confidence", action="store_true",
                        help="with --sample: the records the teacher was least sure of (default: at random)")
    export.add_argument("--seed", type=int, default=0, help="seed of the random sample")
    imp = sub.add_parser("import", help="Label Studio's JSON export back into records")
    imp.add_argument("export", type=Path, help="the project's JSON export")
    imp.add_argument("--out", type=Path, required=True, help="reviewed records (JSONL) to write")
    return p


def export(args: argparse.Namespace) -> str:
    from distill.review import label_config, sample, task
    from ie.config import ConfigError, load_config, resolve_config_path
    from ie.records import read_labelled
    from ie.view import run_view
    from ie.viewer import write_page

    saved = args.run / "config.json"
    run_config = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {}
    if not (args.config or run_config.get("config")):
        raise ConfigError(f"{saved}: not found, so the run's schema is unknown; pass --config")
    dataset = load_config(resolve_config_path(args.config or run_config["config"]))
    records = read_labelled(args.run / "predictions.jsonl")
    chosen = sample(records, args.sample, args.lowest_confidence, args.seed)
    method = run_config.get("method", "teacher")
    tasks = [task(r, method).model_dump(mode="json", exclude_none=True) for r in chosen]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    args.out.with_suffix(".xml").write_text(label_config(dataset.task_schema), encoding="utf-8")
    queue = run_view("Review queue", [f"{len(chosen)} of the {len(records)} records of {args.run}, as Label Studio "
                                      f"gets them ({args.out})."], {method: chosen}, None, dataset.task_schema)
    write_page(args.out.with_suffix(".html"), queue)
    return (f"{len(tasks)} tasks (of {len(records)} records) -> {args.out}; labelling config -> "
            f"{args.out.with_suffix('.xml')}; the queue with its debates -> {args.out.with_suffix('.html')}")


def import_(args: argparse.Namespace) -> str:
    from distill.review import parse_export, reviewed_records
    from ie.schema import write_records

    try:
        data = json.loads(args.export.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{args.export}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    tasks = parse_export(data, args.export)
    n = write_records(args.out, reviewed_records(tasks, args.export))
    return f"{n} reviewed records (of {len(tasks)} tasks; the rest have no submitted annotation) -> {args.out}"


def main(argv: Sequence[str] | None = None) -> int:
    from ie.config import ConfigError

    args = build_parser().parse_args(argv)
    try:
        print(export(args) if args.command == "export" else import_(args))
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
