"""Conflict detection (pure): where the type agents disagree, and how a conflict is shown to an agent.

Entity conflicts: one span given different types by different agents (`label`), or - for flat schemas -
overlapping spans with different boundaries (`boundary`, reported separately). Relation conflicts: one ordered
pair given two relation types the ontology makes exclusive (`relation`). Conflicts that repeat with the same
mentions (a name occurring twice) are merged, so each is debated once.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic

from ie.claims import AgentId, C, EntityClaim, RelationClaim
from ie.config import TaskSchema
from ie.mentions import overlaps

NONE = "N"  # the choice "none of the options is correct"


@dataclass(frozen=True)
class Option(Generic[C]):
    label: str  # how agents see it: '"Smithsonian" is Org'
    agent: AgentId  # the agent of the option's type
    claims: tuple[C, ...]  # every occurrence backing it

    @property
    def confidence(self) -> float:
        return max(c.confidence for c in self.claims)


@dataclass(frozen=True)
class Conflict(Generic[C]):
    id: str
    kind: str  # label | boundary | relation
    options: tuple[Option[C], ...]

    @property
    def agents(self) -> tuple[AgentId, ...]:
        return tuple(sorted({o.agent for o in self.options}))


@dataclass(frozen=True)
class Position:
    """An agent's stance on a conflict: an option index, or None for "none is correct". A Summarizer's verdict
    may instead give the chosen option's span a type no agent claimed (`retype`)."""
    choice: int | None
    confidence: float
    reason: str
    round: int
    retype: str | None = None


def letter(choice: int | None) -> str:
    return NONE if choice is None else chr(ord("A") + choice)


def option_letters(conflicts: Sequence[Conflict], none: bool) -> str:
    """The letters an answer on `conflicts` may choose: those of the most options any of them has, and N where the
    answer may reject them all (the grammar's choices; `parse_letter` still checks each conflict's own)."""
    return "".join(letter(i) for i in range(max(len(c.options) for c in conflicts))) + (NONE if none else "")


def parse_letter(text: str, n_options: int) -> int | None | bool:
    """Option index, None for N, or False when the letter names no option."""
    t = text.strip().upper()[:1]
    if t == NONE:
        return None
    index = ord(t) - ord("A") if t else -1
    return index if 0 <= index < n_options else False


def _components(claims: Sequence[EntityClaim], same_span_only: bool) -> list[list[EntityClaim]]:
    """Groups of claims linked by overlapping spans (or identical spans only, for nested schemas)."""
    groups: list[list[EntityClaim]] = []
    for claim in sorted(claims, key=lambda c: c.arg):
        linked = [g for g in groups if any(
            (o.arg.span == claim.arg.span) if same_span_only else overlaps(o.arg.span, claim.arg.span) for o in g)]
        merged = [claim] + [c for g in linked for c in g]
        groups = [g for g in groups if g not in linked] + [merged]
    return groups


def entity_label(claim: EntityClaim) -> str:
    return f'"{claim.arg.text}" is {claim.arg.type}'


def _relation_label(claim: RelationClaim) -> str:
    return f'"{claim.head.text}" {claim.type} "{claim.tail.text}"'


def _merge(groups: list[list[C]], kind_of: Callable[[tuple[Option[C], ...]], str], label_of: Callable[[C], str],
           prefix: str) -> list[Conflict[C]]:
    """One conflict per distinct set of option labels; each option keeps every occurrence's claims."""
    by_signature: dict[tuple[str, ...], dict[str, list[C]]] = {}
    for group in groups:
        options = by_signature.setdefault(tuple(sorted({label_of(c) for c in group})), {})
        for claim in group:
            options.setdefault(label_of(claim), []).append(claim)
    conflicts = []
    for i, options in enumerate(by_signature.values(), 1):
        opts = tuple(Option(label, claims[0].agent, tuple(claims)) for label, claims in sorted(options.items()))
        conflicts.append(Conflict(f"{prefix}{i}", kind_of(opts), opts))
    return conflicts


def entity_conflicts(claims: Sequence[EntityClaim], nested: bool = False
                     ) -> tuple[list[EntityClaim], list[Conflict[EntityClaim]]]:
    """(claims nobody disputes, conflicts). Claims are assumed to carry one type agent each."""
    free: list[EntityClaim] = []
    contested: list[list[EntityClaim]] = []
    for group in _components(claims, same_span_only=nested):
        if len({c.arg for c in group}) == 1:
            free.extend(group)
        else:
            contested.append(list(group))
    def kind(opts: tuple[Option[EntityClaim], ...]) -> str:
        return "label" if len({c.arg.text for o in opts for c in o.claims}) == 1 else "boundary"

    return free, _merge(contested, kind, entity_label, "e")


def relation_conflicts(claims: Sequence[RelationClaim], schema: TaskSchema
                       ) -> tuple[list[RelationClaim], list[Conflict[RelationClaim]]]:
    """(undisputed relation claims, conflicts between exclusive types on one ordered pair)."""
    by_pair: dict[tuple, list[RelationClaim]] = {}
    for claim in claims:
        by_pair.setdefault(claim.pair, []).append(claim)
    free: list[RelationClaim] = []
    contested: list[list[RelationClaim]] = []
    for group in by_pair.values():
        types = sorted({c.type for c in group})
        if any(schema.exclusive(a, b) for a in types for b in types):
            contested.append(list(group))
        else:
            free.extend(group)
    return free, _merge(contested, lambda opts: "relation", _relation_label, "r")


def render_conflicts(conflicts: Sequence[Conflict], positions: dict[tuple[str, AgentId], Position],
                     offer_none: bool = True, order: Sequence[AgentId] = ()) -> str:
    """Each conflict as a numbered item: its lettered options (and N, "none is correct", if offered), then
    every agent's current stance and reason, agents in `order` first (the round's speaking order)."""
    rank = {agent: i for i, agent in enumerate(order)}
    blocks = []
    for number, conflict in enumerate(conflicts, 1):
        options = "  ".join(f"{letter(i)}) {o.label}" for i, o in enumerate(conflict.options))
        lines = [f"Item {number}: {options}" + (f"  {NONE}) none is correct" if offer_none else "")]
        for agent in sorted(conflict.agents, key=lambda a: (rank.get(a, len(rank)), a)):
            p = positions.get((conflict.id, agent))
            if p is not None:
                lines.append(f"- {agent.name} agent: {letter(p.choice)} ({p.confidence:.2f}) {p.reason!r}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)
