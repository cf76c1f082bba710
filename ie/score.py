"""Score predicted records against gold records (strict NER/RE micro P/R/F1 per type, NER error taxonomy).

    python -m ie.score --gold gold.jsonl --pred pred.jsonl [--json] [--re-mode strict|boundaries|strings]
                       [--config conll04] [--symmetric] [--baseline other.jsonl [--resamples 2000] [--seed 0]]

`--config` lists every schema type and supplies defaults from the config's `score:` section
(`re_mode`, `symmetric`, `semeval`); flags override them. Records pair by id; files that do not belong together
are refused (exit 1, naming the first offending id): a prediction whose text differs from its gold record's, or
no prediction id in gold at all. Gold records with no prediction (scored as empty) and prediction ids not in
gold (ignored) are reported, counts and first ids, in the output (`match` in JSON) and on stderr.
`--baseline` adds a paired bootstrap of `--pred` minus the baseline's micro F1 (NER and RE) over the gold records:
the difference, its 95 % interval and the share of resamples where `--pred` does not beat the baseline. The
baseline must hold exactly the records (ids and texts) of `--pred`.
"""
from __future__ import annotations

import argparse
import json
import sys

from pydantic import BaseModel, Field

from ie.bootstrap import PairedDifference, compare_systems
from ie.config import load_config, resolve_config_path, score_options
from ie.schema import Record, read_records
from ie.scoring import RE_MODES, MatchSummary, RecordMatch, Scores, check_same_texts, evaluate, match_records


class Baseline(BaseModel):
    """`--baseline`: its file, and `--pred` minus it on NER and on RE (`ie.bootstrap.compare_systems`)."""
    path: str
    difference: dict[str, PairedDifference]


class ScoreReport(Scores):
    """What the command reports (`--json`: its JSON form): `evaluate`'s scores, how the files paired up, and
    the bootstrap against `--baseline` when given."""
    match: MatchSummary
    baseline: Baseline | None = Field(default=None, exclude_if=lambda v: v is None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ie.score", description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--gold", required=True, help="gold record JSONL")
    parser.add_argument("--pred", required=True, help="predicted record JSONL")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--re-mode", choices=RE_MODES, help="relation matching (default: config, else strict)")
    parser.add_argument("--config", help="dataset config name or path: schema types and `score:` defaults")
    parser.add_argument("--symmetric", action="store_true", default=None,
                        help="score relation types marked symmetric in the schema without direction")
    parser.add_argument("--baseline", help="another system's prediction JSONL: bootstrap --pred minus it")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    return parser


def format_table(result: ScoreReport) -> str:
    """The result as a plain-text table, scores ×100."""
    lines = [f"records: {result.records}", *_match_lines(result.match),
             f"{'':24} {'P':>6} {'R':>6} {'F1':>6} {'tp':>6} {'fp':>6} {'fn':>6}"]
    for task, title in ((result.ner, "NER (strict)"), (result.re, f"RE ({result.re.mode})")):
        lines.append(title)
        for name, c in [("micro", task.micro), *task.per_type.items()]:
            lines.append(f"  {name[:22]:22} {c.precision * 100:6.2f} {c.recall * 100:6.2f} "
                         f"{c.f1 * 100:6.2f} {c.tp:6d} {c.fp:6d} {c.fn:6d}")
    lines.append("NER errors: " + ", ".join(f"{k} {v}" for k, v in result.errors))
    for name, d in (result.baseline.difference if result.baseline else {}).items():
        lines.append(f"{name.upper()} F1 minus baseline: {d.difference * 100:+.2f} ({d.f1_b * 100:.2f} against "
                     f"{d.f1_a * 100:.2f}), {d.confidence:.0%} interval {d.low * 100:+.2f} to "
                     f"{d.high * 100:+.2f}; not better in {d.p_not_better:.1%} of {d.resamples} resamples")
    if result.semeval:
        macro, micro = result.semeval.macro, result.semeval.micro
        lines.append(f"SemEval official macro-F1 (9 relations, direction counted, Other excluded): "
                     f"{macro.f1 * 100:.2f}; micro-F1 {micro.f1 * 100:.2f}")
    return "\n".join(lines)


def _match_lines(match: MatchSummary) -> list[str]:
    return [f"{what}: {ids.count} (first: {', '.join(ids.first)})"
            for ids, what in ((match.missing, "gold records with no prediction (scored as empty)"),
                              (match.extra, "prediction ids not in gold (ignored)")) if ids.count]


def check_match(match: RecordMatch, pred: list[Record], gold_path: str, pred_path: str) -> None:
    """ValueError when no prediction pairs with a gold record: an empty or a foreign predictions file."""
    if match.matched == 0:
        first = f"its first id {pred[0].id!r} is not" if pred else "it holds no record, so none is"
        raise ValueError(f"{pred_path}: no prediction matches a record of {gold_path} ({first} among the gold "
                         "ids); score predictions made for this gold file")


def check_baseline(pred: list[Record], base: list[Record], pred_path: str, base_path: str) -> None:
    """ValueError naming the first id that `--pred` and `--baseline` do not share, or whose texts differ: the
    bootstrap compares two systems on the same records."""
    by_id = {b.id: b for b in base}
    pred_ids = {p.id for p in pred}
    only = [(p.id, pred_path, base_path) for p in pred if p.id not in by_id]
    only += [(b.id, base_path, pred_path) for b in base if b.id not in pred_ids]
    if only:
        rid, has, lacks = only[0]
        raise ValueError(f"--baseline: record {rid!r} is in {has} but not in {lacks} ({len(only)} ids differ); "
                         "compare systems on the same records")
    check_same_texts(((by_id[p.id], p) for p in pred), f"baseline ({base_path})", f"prediction ({pred_path})")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(resolve_config_path(args.config)) if args.config else None
        options = score_options(config, re_mode=args.re_mode, symmetric=args.symmetric)
        gold, pred = read_records(args.gold), read_records(args.pred)
        match = match_records(gold, pred)
        check_match(match, pred, args.gold, args.pred)
        schema = config.task_schema if config else None
        scores = evaluate(gold, pred, schema=schema, **options.model_dump())
        baseline = None
        if args.baseline:
            base = read_records(args.baseline)
            check_baseline(pred, base, args.pred, args.baseline)
            baseline = Baseline(path=args.baseline, difference=compare_systems(
                gold, base, pred, schema, options.re_mode, options.symmetric, args.resamples, args.seed))
        result = ScoreReport(**dict(scores), match=match.summary(), baseline=baseline)
    except (ValueError, OSError) as exc:  # ConfigError and RecordFormatError are ValueErrors
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in _match_lines(result.match):
        print(f"warning: {line}", file=sys.stderr)
    if result.baseline and (too_few := result.baseline.difference["ner"].too_few):
        print(f"warning: {too_few}", file=sys.stderr)
    print(json.dumps(result.as_dict(), indent=2) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
