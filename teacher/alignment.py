"""Alignment (§3.4), pure: Δ(A, B) = (A \\ B) ∪ (B \\ A) between the typed entities NER extracted (A) and the
typed entities the relations require (B), and its resolution once the owning type agents have checked the
required ones.

A \\ B (entities in no relation) is normal and only reported. B \\ A is what alignment removes: a required
entity NER missed (`missing`) is added if its type agent accepts it, else its relations are dropped; a
required type on a span NER typed otherwise (`mismatched`) replaces NER's type if the agent accepts it more
confidently than NER held its type, else the relations needing it are dropped.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ie.claims import AgentId, Arg, Decision, EntityClaim, EntityDecision, RelationDecision, Settlement


@dataclass(frozen=True)
class Delta:
    ner_only: tuple[Arg, ...]
    missing: tuple[Arg, ...]
    mismatched: tuple[tuple[Arg, Arg], ...]  # (NER's typed span, the type a relation requires there)

    @property
    def to_check(self) -> tuple[Arg, ...]:
        return self.missing + tuple(required for _, required in self.mismatched)

    @property
    def clean(self) -> bool:
        return not self.to_check

    def as_dict(self) -> dict[str, Any]:
        return {
            "size": len(self.ner_only) + len(self.to_check),
            "ner_only": [f"{a.text}/{a.type}" for a in self.ner_only],
            "re_only": [f"{a.text}/{a.type}" for a in self.to_check],
            "type_mismatch": [f"{a.text}: {a.type} -> {b.type}" for a, b in self.mismatched],
        }


@dataclass(frozen=True)
class Check:
    """A type agent's answer on one required entity."""
    accepted: bool
    confidence: float


def required(relations: Sequence[RelationDecision]) -> set[Arg]:
    return {arg for d in relations for arg in (d.claim.head, d.claim.tail)}


def delta(entities: Sequence[EntityDecision], relations: Sequence[RelationDecision]) -> Delta:
    ner = {d.claim.arg for d in entities}
    needed = required(relations)
    by_span = {a.span: a for a in ner}
    re_only = sorted(needed - ner)
    return Delta(
        ner_only=tuple(sorted(ner - needed)),
        missing=tuple(b for b in re_only if b.span not in by_span),
        mismatched=tuple((by_span[b.span], b) for b in re_only if b.span in by_span),
    )


def _strength(d: Decision) -> float:
    return d.confidence if d.confidence is not None else max(d.support)


def align(entities: Sequence[EntityDecision], relations: Sequence[RelationDecision], gap: Delta,
          checks: dict[Arg, Check]) -> tuple[list[EntityDecision], list[RelationDecision], list[dict[str, Any]]]:
    """(entities, relations, actions) with B \\ A resolved; an unchecked entity counts as rejected."""
    ents = {d.claim.arg: d for d in entities}
    actions: list[dict[str, Any]] = []
    for arg in gap.missing:
        check = checks.get(arg, Check(False, 0.0))
        if check.accepted:
            ents[arg] = Decision(EntityClaim(arg, AgentId("ner", arg.type), check.confidence), (check.confidence,),
                                 Settlement("added_by_feedback"))
            actions.append({"action": "added", "entity": arg.text, "type": arg.type})
    for old, new in gap.mismatched:
        check = checks.get(new, Check(False, 0.0))
        if check.accepted and check.confidence > _strength(ents[old]):
            del ents[old]
            ents[new] = Decision(EntityClaim(new, AgentId("ner", new.type), check.confidence), (check.confidence,),
                                 Settlement("retyped_by_feedback"))
            actions.append({"action": "retyped", "entity": new.text, "from": old.type, "type": new.type})
    kept = []
    for d in relations:
        rel = d.claim
        if rel.head in ents and rel.tail in ents:
            kept.append(d)
        else:
            actions.append({"action": "dropped_relation", "relation": f"{rel.head.text} {rel.type} {rel.tail.text}"})
    return list(ents.values()), kept, actions
