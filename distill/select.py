"""Which teacher records become training examples. Pure functions over records; no files, no models.

1. `screen`: drop excluded records (dev/test ids or texts) and records whose teacher labels are not trusted:
   any item or the record below the confidence threshold, an unresolved conflict, a failed call.
2. `select`: per entity type `ner_per_type` records and per relation type `re_per_type` records that contain
   it, highest record confidence first (seeded tie-break), each record at most once. Types are filled rarest
   first, so a common type cannot use up the few records a rare type has. A chosen record keeps all its labels.
   `select_all` takes every record instead (the sweep's `all` point).
"""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ie.config import TaskSchema
from ie.records import LabelledRecord
from ie.schema import Record

LOW_CONFIDENCE = "low_confidence"
UNRESOLVED_CONFLICT = "unresolved_conflict"
FAILED_CALLS = "failed_calls"
EXCLUDED = "excluded"
DUPLICATE = "duplicate"


def normalize_text(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Exclusion:
    """Sentences that must never enter training: matched by id or by identical (whitespace-normalized) text."""
    ids: frozenset[str] = frozenset()
    texts: frozenset[str] = frozenset()

    @classmethod
    def from_records(cls, records: Iterable[Record]) -> Exclusion:
        records = list(records)
        return cls(frozenset(r.id for r in records), frozenset(normalize_text(r.text) for r in records))

    def __contains__(self, record: Record) -> bool:
        return record.id in self.ids or normalize_text(record.text) in self.texts

    def __len__(self) -> int:
        return len(self.ids)


def record_confidence(record: LabelledRecord) -> float | None:
    """The record-level `confidence` the teacher wrote, else the lowest item confidence, else None."""
    if record.confidence is not None:
        return record.confidence
    items = [x.confidence for x in [*record.entities, *record.relations] if x.confidence is not None]
    return min(items) if items else None


def failure_reasons(record: LabelledRecord, threshold: float, max_failed_calls: int = 0) -> list[str]:
    """Why a record's teacher labels are not trusted; empty when they are."""
    reasons = []
    conf = record_confidence(record)
    items = [x.confidence for x in [*record.entities, *record.relations] if x.confidence is not None]
    if conf is None and threshold > 0 or (conf is not None and conf < threshold) \
            or any(c < threshold for c in items):
        reasons.append(LOW_CONFIDENCE)
    stats = record.stats
    if stats.unresolved_conflicts:
        reasons.append(UNRESOLVED_CONFLICT)
    if stats.failed_calls > max_failed_calls:
        reasons.append(FAILED_CALLS)
    return reasons


@dataclass
class Screening:
    passed: list[LabelledRecord]
    total: int
    rejected: dict[str, list[str]] = field(default_factory=dict)  # record id -> reasons

    @property
    def reason_counts(self) -> dict[str, int]:
        """Records per reason (a record failing twice counts under both)."""
        return dict(Counter(r for reasons in self.rejected.values() for r in reasons))

    def summary(self) -> dict:
        return {"total": self.total, "passed": len(self.passed), "rejected": len(self.rejected),
                "reasons": self.reason_counts}


def screen(records: Iterable[LabelledRecord], threshold: float, exclusion: Exclusion = Exclusion(),
           max_failed_calls: int = 0) -> Screening:
    """Keep the records the teacher is sure of, never an excluded one nor the same text twice.
    `max_failed_calls`: failed LLM calls a record may have had (its confidence already pays for them)."""
    passed: list[LabelledRecord] = []
    rejected: dict[str, list[str]] = {}
    seen: set[str] = set()
    total = 0
    for rec in records:
        total += 1
        key = normalize_text(rec.text)
        reasons = [EXCLUDED] if rec in exclusion else failure_reasons(rec, threshold, max_failed_calls)
        if not reasons and key in seen:
            reasons = [DUPLICATE]
        if reasons:
            rejected[rec.id] = reasons
        else:
            seen.add(key)
            passed.append(rec)
    return Screening(passed=passed, total=total, rejected=rejected)


@dataclass
class Selection:
    records: list[LabelledRecord]  # chosen, in choice order
    chosen_for: dict[str, list[str]]  # "entity:Peop" / "relation:Kill" -> ids chosen for it
    candidates: dict[str, int]  # type -> records that contain it (before selection)
    warnings: list[str] = field(default_factory=list)  # one per type with too few candidates


def _wanted(schema: TaskSchema, ner_per_type: int, re_per_type: int) -> dict[str, int]:
    wanted = {f"entity:{t}": ner_per_type for t in schema.entity_types}
    wanted.update({f"relation:{t}": re_per_type for t in schema.relation_types})
    return wanted


def _types_in(record: LabelledRecord) -> set[str]:
    kinds = {f"entity:{e.type}" for e in record.entities}
    kinds.update(f"relation:{r.type}" for r in record.relations)
    return kinds


def select(records: list[LabelledRecord], schema: TaskSchema, ner_per_type: int, re_per_type: int,
           seed: int) -> Selection:
    """Pick records per type (see module doc). Same inputs and seed, same selection."""
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    tie = {i: rank for rank, i in enumerate(order)}
    ranked = sorted(range(len(records)), key=lambda i: (-(record_confidence(records[i]) or 0.0), tie[i]))
    wanted = _wanted(schema, ner_per_type, re_per_type)
    holders = {k: [i for i in ranked if k in _types_in(records[i])] for k in wanted}
    candidates = {k: len(v) for k, v in holders.items()}
    taken: list[int] = []
    used: set[int] = set()
    chosen_for: dict[str, list[str]] = {}
    warnings: list[str] = []
    for kind in sorted(wanted, key=lambda k: candidates[k]):  # rarest first; stable in schema order
        picks = [i for i in holders[kind] if i not in used][:wanted[kind]]
        taken.extend(picks)
        used.update(picks)
        chosen_for[kind] = [records[i].id for i in picks]
        if len(picks) < wanted[kind]:
            warnings.append(f"{kind}: wanted {wanted[kind]} records, only {len(picks)} available "
                            f"({candidates[kind]} passing records contain it)")
    return Selection(records=[records[i] for i in taken], chosen_for={k: chosen_for[k] for k in wanted},
                     candidates=candidates, warnings=warnings)


def select_all(records: list[LabelledRecord], schema: TaskSchema) -> Selection:
    """Every record, in order, each type "chosen" by the records that contain it: nothing is left out."""
    holders = {k: [r.id for r in records if k in _types_in(r)] for k in _wanted(schema, 0, 0)}
    return Selection(records=list(records), chosen_for=holders, candidates={k: len(v) for k, v in holders.items()})


def label_counts(records: Iterable[LabelledRecord]) -> dict[str, int]:
    """Labels per type over the given records (what the student will see)."""
    counts: Counter[str] = Counter()
    for rec in records:
        counts.update(f"entity:{e.type}" for e in rec.entities)
        counts.update(f"relation:{r.type}" for r in rec.relations)
    return dict(sorted(counts.items()))
