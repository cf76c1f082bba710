"""What agents claim, what survives, and how the survivors become a record (pure functions).

An `EntityClaim` is one agent's typed span; a `RelationClaim` one agent's typed pair of spans. A `Decision` is
a claim kept in the output, with the confidences backing it and how it was settled (an `EntityDecision` holds
an entity claim, a `RelationDecision` a relation claim). `joint_claims` grounds an answer that names entities and
relations with their types (the teacher's one-step baseline, the student). In `ie` because the teacher and the
student's answer format (`ie.student_format`) both ground and assemble with it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Generic, Literal, TypeVar, get_args

from pydantic import BeforeValidator, PlainSerializer

from ie.config import TaskSchema
from ie.grounding import Span
from ie.mentions import MentionRules, ground, overlaps, resolve_overlaps
from ie.schema import Entity, Record, Relation


@dataclass(frozen=True)
class AgentId:
    """Who claims or asks: a type agent (`group` ner or re, `name` its type), or another role ("direct",
    "summarizer" with `name` "likelihood"). Its one text form, in transcripts too, is "ner:Peop", "direct"."""
    group: str
    name: str = ""

    def __str__(self) -> str:
        return f"{self.group}:{self.name}" if self.name else self.group

    def __lt__(self, other: AgentId) -> bool:  # as its text sorts: speaking orders stay those of the text form
        return str(self) < str(other)

    @classmethod
    def parse(cls, text: str) -> AgentId:
        group, _, name = text.partition(":")
        return cls(group, name)


SettledBy = Literal["uncontested", "consensus_round", "summarizer", "fallback", "highest_confidence", "vote",
                    "added_by_feedback", "retyped_by_feedback"]


@dataclass(frozen=True)
class Settlement:
    """How a decision was settled; `round` is the debate round of a consensus. Its one text form, in
    transcripts too, is "uncontested", "consensus_round_2", "summarizer", ..."""
    how: SettledBy
    round: int | None = None

    def __post_init__(self) -> None:
        if (self.how == "consensus_round") != (self.round is not None):
            raise ValueError(f"settlement {self.how!r}: a round goes with consensus_round and nothing else")

    def __str__(self) -> str:
        return f"{self.how}_{self.round}" if self.round is not None else self.how

    @classmethod
    def parse(cls, text: str) -> Settlement:
        how, _, round = text.rpartition("_")
        if how == "consensus_round" and round.isdigit():
            return cls("consensus_round", int(round))
        for known in get_args(SettledBy):
            if text == known != "consensus_round":
                return cls(known)
        raise ValueError(f"unknown settlement {text!r}: expected consensus_round_N or one of {get_args(SettledBy)}")


UNCONTESTED = Settlement("uncontested")


def _parsed(kind: type[AgentId] | type[Settlement]):
    return BeforeValidator(lambda v: kind.parse(v) if isinstance(v, str) else v)


# As fields of a pydantic model (a transcript): read from, and written as, their text form.
AgentIdText = Annotated[AgentId, _parsed(AgentId), PlainSerializer(str, return_type=str)]
SettlementText = Annotated[Settlement, _parsed(Settlement), PlainSerializer(str, return_type=str)]


@dataclass(frozen=True, order=True)
class Arg:
    """A typed span of the text."""
    start: int
    end: int
    type: str
    text: str

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)


@dataclass(frozen=True)
class EntityClaim:
    arg: Arg
    agent: AgentId
    confidence: float
    evidence: str = ""


@dataclass(frozen=True)
class RelationClaim:
    head: Arg
    tail: Arg
    type: str
    agent: AgentId
    confidence: float
    evidence: str = ""

    @property
    def pair(self) -> tuple[tuple[int, int], tuple[int, int]]:
        return (self.head.span, self.tail.span)


Claim = EntityClaim | RelationClaim
C = TypeVar("C", EntityClaim, RelationClaim)  # one kind of claim: what a Decision, a Conflict, ... holds


@dataclass(frozen=True)
class Decision(Generic[C]):
    claim: C
    support: tuple[float, ...]  # confidences of the agents (and rounds) that back this claim
    settled: Settlement = UNCONTESTED
    confidence: float | None = None


EntityDecision = Decision[EntityClaim]
RelationDecision = Decision[RelationClaim]


def uncontested(claims: Sequence[C]) -> list[Decision[C]]:
    return [Decision(c, (c.confidence,)) for c in claims]


def entity_claims(text: str, items: Sequence, etype: str, agent: AgentId, rules: MentionRules,
                  type_names: Sequence[str]) -> tuple[list[EntityClaim], int]:
    """Every grounded occurrence of every item (of one agent and type), nested repeats dropped; and how
    many items could not be grounded."""
    found, ungrounded = [], 0
    for item in items:
        spans = ground(text, item.text, rules, type_names)
        ungrounded += not spans
        for s in spans:
            claim = EntityClaim(Arg(s.start, s.end, etype, s.text), agent, item.confidence, item.evidence)
            found.append(((s.start, s.end), 0.0, claim))
    return resolve_overlaps(found), ungrounded


def snap(spans: Sequence[Span], allowed: Sequence[str], entities: Sequence[Arg]) -> list[Arg]:
    """Relation arguments onto known entities of an allowed type where they overlap ("Reagan" -> "Ronald
    Reagan"), the one with the same span first (nested entities); otherwise the span itself, typed with the
    first allowed type."""
    args = []
    for s in spans:
        known = [e for e in entities if e.type in allowed and overlaps(e.span, (s.start, s.end))]
        known.sort(key=lambda e: e.span != (s.start, s.end))
        args.append(known[0] if known else Arg(s.start, s.end, allowed[0], s.text))
    return sorted(set(args))


def closest_pair(heads: Sequence[Arg], tails: Sequence[Arg]) -> tuple[Arg, Arg] | None:
    pairs = [(h, t) for h in heads for t in tails if not overlaps(h.span, t.span)]
    if not pairs:
        return None
    return min(pairs, key=lambda p: (abs(p[0].start - p[1].start), p[0].start))


def relation_claim(text: str, head: str, tail: str, relation: str, schema: TaskSchema, entities: Sequence[Arg],
                   rules: MentionRules, agent: AgentId, confidence: float, evidence: str = "",
                   named_types: tuple[str | None, str | None] = (None, None)) -> RelationClaim | None:
    """Ground a named (head, tail) pair of `relation`; None when an argument cannot be grounded. An argument
    NER lacks takes the type the model named for it if the relation allows it, else the relation's first."""
    spec, names = schema.relation_types[relation], list(schema.entity_types)
    head_types = _prefer(spec.head or names, named_types[0])
    tail_types = _prefer(spec.tail or names, named_types[1])
    heads = snap(ground(text, head, rules, names), head_types, entities)
    tails = snap(ground(text, tail, rules, names), tail_types, entities)
    pair = closest_pair(heads, tails)
    if pair is None:
        return None
    return RelationClaim(pair[0], pair[1], relation, agent, confidence, evidence)


def _prefer(types: Sequence[str], named: str | None) -> list[str]:
    return [named] + [t for t in types if t != named] if named in types else list(types)


@dataclass(frozen=True)
class NamedEntity:
    """A mention an answer names with its type, before grounding."""
    text: str
    type: str
    confidence: float = 1.0
    evidence: str = ""


@dataclass(frozen=True)
class NamedRelation:
    """A (head, tail) pair an answer names with its relation (and maybe its arguments' types), before grounding."""
    head: str
    tail: str
    relation: str
    confidence: float = 1.0
    evidence: str = ""
    head_type: str | None = None
    tail_type: str | None = None


def typed_entity_claims(text: str, items: Sequence[NamedEntity], schema: TaskSchema, rules: MentionRules,
                        agent: AgentId) -> tuple[list[EntityClaim], int]:
    """Ground items that each name their type; one answer's nested repeats of a type are dropped. Also how many
    items could not be grounded."""
    claims, ungrounded, names = [], 0, list(schema.entity_types)
    for etype in schema.entity_types:
        found, missed = entity_claims(text, [i for i in items if i.type == etype], etype, agent, rules, names)
        claims += found
        ungrounded += missed
    return claims, ungrounded


def named_relation_claims(text: str, items: Sequence[NamedRelation], schema: TaskSchema, rules: MentionRules,
                          entities: Sequence[Arg], agent: AgentId) -> tuple[list[RelationClaim], int]:
    """Ground each named pair (see `relation_claim`); also how many could not be grounded."""
    claims, ungrounded = [], 0
    for item in items:
        claim = relation_claim(text, item.head, item.tail, item.relation, schema, entities, rules, agent,
                               item.confidence, item.evidence, (item.head_type, item.tail_type))
        ungrounded += claim is None
        if claim is not None:
            claims.append(claim)
    return claims, ungrounded


def joint_claims(text: str, entities: Sequence[NamedEntity], relations: Sequence[NamedRelation], schema: TaskSchema,
                 rules: MentionRules, agent: AgentId) -> tuple[list[EntityClaim], list[RelationClaim], int]:
    """A joint answer as grounded entity and relation claims (relation arguments snapped to its entities), and
    how many of its items could not be grounded."""
    ents, missed_ents = typed_entity_claims(text, entities, schema, rules, agent)
    rels, missed_rels = named_relation_claims(text, relations, schema, rules, [e.arg for e in ents], agent)
    return ents, rels, missed_ents + missed_rels


def with_arguments(entities: list[EntityDecision], relations: Sequence[RelationDecision]) -> list[EntityDecision]:
    """A joint answer's relations imply their arguments are entities, even when its entity list forgot them."""
    known = {d.claim.arg for d in entities}
    added: dict[Arg, EntityDecision] = {}
    for d in relations:
        for arg in (d.claim.head, d.claim.tail):
            if arg not in known and arg not in added:
                added[arg] = Decision(EntityClaim(arg, d.claim.agent, d.claim.confidence), d.support, d.settled)
    return entities + list(added.values())


def flatten(entities: Sequence[EntityDecision]) -> list[EntityDecision]:
    """Flat typing: no two output entities overlap (the more confident wins)."""
    scored = [(d.claim.arg.span, d.confidence or 0.0, d) for d in entities]
    return resolve_overlaps(scored)


def assemble(record: Record, entities: Sequence[EntityDecision], relations: Sequence[RelationDecision]) -> Record:
    """The output record: entities in text order, relations indexing them (a relation whose arguments are not
    both among the entities is dropped), one relation per (head, tail, type)."""
    ents = sorted({d.claim.arg: d for d in entities}.items())
    index = {arg: i for i, (arg, _) in enumerate(ents)}
    out_ents = [Entity(start=a.start, end=a.end, type=a.type, text=a.text, confidence=d.confidence)
                for a, d in ents]
    rels: dict[tuple[int, int, str], Relation] = {}
    for d in relations:
        c = d.claim
        if c.head in index and c.tail in index:
            key = (index[c.head], index[c.tail], c.type)
            rels.setdefault(key, Relation(head=key[0], tail=key[1], type=c.type, confidence=d.confidence))
    return Record(id=record.id, text=record.text, entities=out_ents, relations=list(rels.values()),
                  tokens=record.tokens, meta=record.meta)
