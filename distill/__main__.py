"""Turn a teacher run into student training data.

    python -m distill --teacher runs/X --config configs/conll04.yaml --out data/distilled/X \
        [--ner-per-type 5 --re-per-type 4] [--threshold 0.6] [--exclude FILE.jsonl] [--sweep-per-type 1,3,5,all] \
        [--reviewed reviewed.jsonl]
    python -m distill review export|import ...   (human review in Label Studio: python -m distill review -h)

Settings come from the config's `distill:` section, then the flags. A sweep writes one folder a point into --out:
`per_type<k>/` (k per entity type, min(k, re_per_type) per relation type) and `per_type_all/` (every record that
passes screening), each split into train and validation alike. The dataset's `exclude_splits`
(default dev and test) and every `--exclude` file are kept out by id and by text. `--reviewed` records (from
`review import`) replace the teacher's of the same id, at confidence 1.0.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from distill.config import DistillConfig, SweepPoint
from distill.export import export, file_sha256
from distill.select import Exclusion, Screening, Selection, screen, select, select_all
from ie.cli import add_flags, from_sources
from ie.config import DatasetConfig, TaskSchema, load_config, resolve_config_path
from ie.logs import add_verbose_flag, setup_logging
from ie.records import LabelledRecord, read_labelled
from ie.schema import Record


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m distill", description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--teacher", type=Path, required=True, help="teacher output folder (has predictions.jsonl)")
    p.add_argument("--config", required=True, help="dataset config (path or name, e.g. conll04)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--reviewed", type=Path, help="reviewed records (python -m distill review import): trusted "
                   "over the teacher's")
    add_flags(p, DistillConfig)
    add_verbose_flag(p)
    return p


def load_exclusion(dataset: DatasetConfig, cfg: DistillConfig) -> tuple[Exclusion, dict[str, int]]:
    """Records of the excluded splits and files, and how many each contributed."""
    from ie.datasets import load_input, load_split

    records: list[Record] = []
    counts: dict[str, int] = {}
    for split in cfg.exclude_splits:
        if split not in dataset.splits:
            print(f"note: {dataset.source}: no split {split!r} to exclude", file=sys.stderr)
            continue
        got = list(load_split(dataset, split))
        counts[f"split:{split}"] = len(got)
        records += got
    for path in cfg.exclude:
        got = list(load_input(path))
        counts[str(path)] = len(got)
        records += got
    return Exclusion.from_records(records), counts


def selection_at(point: SweepPoint | None, screening: Screening, schema: TaskSchema, cfg: DistillConfig
                 ) -> Selection:
    """The records `point` trains on (outside a sweep: cfg's per-type counts)."""
    caps = (cfg.ner_per_type, cfg.re_per_type) if point is None else point.caps(cfg)
    return select_all(screening.passed, schema) if caps is None else select(screening.passed, schema, *caps, cfg.seed)


def teacher_records(args: argparse.Namespace, predictions: Path, schema: TaskSchema) -> list[LabelledRecord]:
    """The run's records, with the reviewed ones in their place (`distill.review.apply_reviewed`)."""
    records = read_labelled(predictions)
    if args.reviewed is None:
        return records
    from distill.review import ReviewError, apply_reviewed

    reviewed = read_labelled(args.reviewed)
    try:
        records = apply_reviewed(records, reviewed, schema, args.reviewed)
    except ReviewError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"reviewed: {len(reviewed)} records of {args.reviewed} replace the teacher's")
    return records


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["review"]:
        from distill.review_cli import main as review

        return review(argv[1:])
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    dataset = load_config(resolve_config_path(args.config))
    cfg = from_sources(DistillConfig, "distill", dataset.section("distill"), vars(args), dataset.source)
    predictions = args.teacher / "predictions.jsonl"
    if not predictions.is_file():
        raise SystemExit(f"{predictions}: not found; --teacher must be a teacher output folder")
    exclusion, excluded = load_exclusion(dataset, cfg)
    records = teacher_records(args, predictions, dataset.task_schema)
    screening = screen(records, cfg.threshold, exclusion, cfg.max_failed_calls)
    print(f"screening: {screening.summary()}")
    sources = {"teacher": str(predictions), "teacher_sha256": file_sha256(predictions),
               "config": str(dataset.source), "excluded_records": excluded}
    points: list[SweepPoint | None] = [*cfg.sweep_points()] or [None]
    for point in points:
        out = args.out / point.folder if point else args.out
        selection = selection_at(point, screening, dataset.task_schema, cfg)
        if not selection.records:
            raise SystemExit(f"{predictions}: no record passed screening ({screening.summary()['reasons']}); "
                             "lower --threshold, or label sentences outside the excluded splits")
        manifest = export(out, screening, selection, dataset.task_schema, cfg, sources, point)
        sel = manifest["selection"]
        cost = manifest["openai"].get("estimated_cost_usd")
        print(f"{out}: {sel['records']} records (train {sel['train']}, validation {sel['validation']}); "
              f"OpenAI fine-tuning estimate: {'n/a' if cost is None else f'${cost}'}")
        for w in manifest["warnings"]:
            print(f"warning: {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
