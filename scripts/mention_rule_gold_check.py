"""What each mention rule (`ie.mentions`) would change or drop of the GOLD entity spans of every dataset.

    PYTHONPATH=. python scripts/mention_rule_gold_check.py [--datasets conll04,scierc] [--splits train,dev]

A rule on by default must change about 0 % of every dataset's gold spans; a rule that changes some is a
per-dataset option. Reads the gold entities of the train and dev splits (those the config has) through
`ie.datasets`; no model.
Prints a markdown table: the % of gold spans each rule changes or drops, then a few changed spans per cell;
then the % of gold relations a `pairs_per_agent` limit would drop (those past the limit of their type in their
sentence).
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence

from ie.config import load_config, resolve_config_path
from ie.datasets import load_split
from ie.mentions import MentionProfile, normalise, rejection
from ie.schema import Record

DATASETS = ("conll04", "conll2003", "scierc", "nyt", "semeval")
NONE = MentionProfile(trim_function_words=False, drop_clauses=False)  # only the labels and quotes stripped
Rule = Callable[[Record], list[tuple[str, str]]]  # a record -> (gold span, what the rule makes of it)


def _outcome(span: str, profile: MentionProfile) -> str:
    mention, _ = normalise(span, profile)
    return "<dropped>" if rejection(mention, profile) else mention


def _switch(**switch: object) -> Rule:
    """One rule: the profile with only this switch set, against the profile with none."""
    profile = NONE.model_copy(update=switch)
    return lambda r: [(e.text, out) for e in r.entities if (out := _outcome(e.text, profile)) != _outcome(e.text, NONE)]


def _labels_and_quotes(record: Record) -> list[tuple[str, str]]:
    return [(e.text, out) for e in record.entities if (out := _outcome(e.text, NONE)) != e.text]


def _clause_punct(record: Record) -> list[tuple[str, str]]:
    return [(e.text, "<dropped>") for e in record.entities if re.search(r"(^|\s)[,;](\s|$)", e.text)]


def _max_chars(limit: int) -> Rule:
    return lambda r: [(e.text, e.text[:limit]) for e in r.entities if len(e.text) > limit]


def _per_sentence(limit: int, per_type: bool) -> Rule:
    """The gold spans past the first `limit` of the sentence (of their type, with `per_type`)."""
    def cut(record: Record) -> list[tuple[str, str]]:
        seen: dict[str, int] = {}
        out = []
        for e in sorted(record.entities, key=lambda e: (e.start, e.end)):
            key = e.type if per_type else ""
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > limit:
                out.append((e.text, "<dropped>"))
        return out
    return cut


# (rule, what it does); the first rows are the domain-neutral guards against clause-like spans (on by default).
RULES: tuple[tuple[str, Rule], ...] = (
    ("trim_function_words", _switch(trim_function_words=True)),
    ("drop_clauses", _switch(drop_clauses=True)),
    ("(not used: drop a ',' or ';' token)", _clause_punct),
    ("labels and quotes (always)", _labels_and_quotes),
    ("strip_article", _switch(strip_article=True)),
    ("name_core", _switch(name_core=True)),
    ("strip_possessive", _switch(strip_possessive=True)),
    ("require_capital_or_digit", _switch(require_capital_or_digit=True)),
    ("drop_pronouns", _switch(drop_pronouns=True)),
    ("max_words: 5", _switch(max_words=5)),
    ("max_words: 8", _switch(max_words=8)),
    ("max_chars: 40", _max_chars(40)),
    ("items_per_agent: 5", _per_sentence(5, per_type=True)),
    ("items_per_sentence: 10", _per_sentence(10, per_type=False)),
)


PAIR_LIMITS = (1, 2, 3, 4, 5)


def pairs_past(record: Record, limit: int) -> int:
    """The gold relations of the record past the first `limit` of their type."""
    counts: dict[str, int] = {}
    for r in record.relations:
        counts[r.type] = counts.get(r.type, 0) + 1
    return sum(max(0, n - limit) for n in counts.values())


def gold_records(name: str, splits: Sequence[str]) -> list[Record]:
    config = load_config(resolve_config_path(name))
    return [r for split in splits if split in config.splits and config.split_path(split).exists()
            for r in load_split(config, split)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated config names")
    p.add_argument("--splits", default="train,dev", help="comma-separated splits (those a config lacks are skipped)")
    p.add_argument("--examples", type=int, default=3, help="changed spans shown per rule and dataset")
    args = p.parse_args(argv)
    names = [n for n in args.datasets.split(",") if n]
    records = {n: gold_records(n, args.splits.split(",")) for n in names}
    total = {n: sum(len(r.entities) for r in records[n]) for n in names}
    print("| rule | " + " | ".join(f"{n} ({total[n]})" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    shown = []
    for rule, apply in RULES:
        cells = []
        for n in names:
            changed = [pair for r in records[n] for pair in apply(r)]
            cells.append(f"{100 * len(changed) / max(total[n], 1):.2f} %")
            if changed and args.examples:
                shown.append(f"- {rule}, {n}: " + "; ".join(f"{s!r} -> {o!r}" for s, o in changed[:args.examples]))
        print(f"| {rule} | " + " | ".join(cells) + " |")
    print("\n".join(["", *shown]))
    related = [n for n in names if any(r.relations for r in records[n])]
    pairs = {n: sum(len(r.relations) for r in records[n]) for n in related}
    print("\n| pairs_per_agent | " + " | ".join(f"{n} ({pairs[n]})" for n in related) + " |")
    print("|---|" + "---|" * len(related))
    for limit in PAIR_LIMITS:
        cells = [f"{100 * sum(pairs_past(r, limit) for r in records[n]) / pairs[n]:.2f} %" for n in related]
        print(f"| {limit} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
