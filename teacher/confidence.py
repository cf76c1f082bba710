"""Confidence (pure): what distillation uses to keep records it can trust.

An item's confidence is the mean confidence of the agents backing it, discounted by how hard it was to settle
(undisputed > consensus in round 1 > round 2 > Summarizer > fallback). Relations are discounted by their
weaker argument; an entity that an accepted relation needs gains from that agreement across tasks. A record's
confidence blends its items' mean and minimum and is cut for every failed call and unresolved conflict.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from statistics import mean

from ie.claims import Arg, Decision, EntityDecision, RelationDecision, SettledBy, Settlement

SETTLED_WEIGHT: dict[SettledBy, float] = {  # a consensus: by its round
    "uncontested": 1.0, "vote": 1.0, "summarizer": 0.8, "fallback": 0.6, "highest_confidence": 0.8,
    "added_by_feedback": 0.85, "retyped_by_feedback": 0.75,
}
EMPTY_RECORD = 0.5  # no items: no evidence either way
FAILED_CALL_FACTOR = 0.5
UNRESOLVED_FACTOR = 0.8


def settled_weight(settled: Settlement) -> float:
    if settled.round is not None:
        return max(0.5, 1.0 - 0.05 * settled.round)
    return SETTLED_WEIGHT[settled.how]


def item_confidence(d: Decision) -> float:
    return min(1.0, max(0.0, mean(d.support) * settled_weight(d.settled)))


def score(entities: Sequence[EntityDecision], relations: Sequence[RelationDecision]
          ) -> tuple[list[EntityDecision], list[RelationDecision]]:
    """Entities and relations with `confidence` set."""
    base: dict[Arg, float] = {d.claim.arg: item_confidence(d) for d in entities}
    rels, backing = [], {arg: 0.0 for arg in base}
    for d in relations:
        c = d.claim
        args = [base.get(c.head, 0.0), base.get(c.tail, 0.0)]
        conf = round(item_confidence(d) * min(args) ** 0.5, 4)
        rels.append(replace(d, confidence=conf))
        for arg in (c.head, c.tail):
            if arg in backing:
                backing[arg] = max(backing[arg], conf)
    ents = [replace(d, confidence=round(1 - (1 - base[d.claim.arg]) * (1 - 0.5 * backing[d.claim.arg]), 4))
            for d in entities]
    return ents, rels


def record_confidence(item_confidences: Sequence[float], failed_calls: int, unresolved_conflicts: int) -> float:
    base = (0.5 * mean(item_confidences) + 0.5 * min(item_confidences)) if item_confidences else EMPTY_RECORD
    return round(base * FAILED_CALL_FACTOR ** failed_calls * UNRESOLVED_FACTOR ** unresolved_conflicts, 4)
