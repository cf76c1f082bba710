"""Counts of a list of records: what `python -m ie.datasets stats` prints and the tests check."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ie.schema import Record


@dataclass(frozen=True)
class SplitStats:
    records: int
    entities: int
    relations: int
    entity_types: dict[str, int]
    relation_types: dict[str, int]
    # NYT triples whose strings do not occur in the text: gold triples that no record relation holds.
    ungrounded_triples: int


def split_stats(records: list[Record]) -> SplitStats:
    entity_types = Counter(e.type for r in records for e in r.entities)
    relation_types = Counter(rel.type for r in records for rel in r.relations)
    ungrounded = sum(len((r.meta or {}).get("ungrounded_triples", [])) for r in records)
    return SplitStats(
        records=len(records),
        entities=sum(entity_types.values()),
        relations=sum(relation_types.values()),
        entity_types=dict(entity_types.most_common()),
        relation_types=dict(relation_types.most_common()),
        ungrounded_triples=ungrounded,
    )


def format_stats(title: str, stats: SplitStats) -> str:
    lines = [f"{title}: {stats.records} records, {stats.entities} entities, {stats.relations} relations"]
    if stats.ungrounded_triples:
        lines[0] += f" (+{stats.ungrounded_triples} ungrounded triples kept in meta)"
    for label, counts in (("entity types", stats.entity_types), ("relation types", stats.relation_types)):
        if counts:
            lines.append(f"  {label}: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
    return "\n".join(lines)
