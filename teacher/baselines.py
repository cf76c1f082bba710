"""Single-prompt baselines on the same harness (prompt family, schema, grounding, post-processing):
`direct` (all entity types in one prompt, "AEiO"), `one-step` (entities and relations jointly) and
`direct-re` (relation triplets; entities are their arguments)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ie.claims import (
    AgentId,
    EntityClaim,
    EntityDecision,
    NamedEntity,
    NamedRelation,
    RelationClaim,
    RelationDecision,
    joint_claims,
    named_relation_claims,
    uncontested,
    with_arguments,
)
from ie.schema import Record
from teacher.answers import typed_answers
from teacher.context import RecordContext
from teacher.templates import relation_list, type_list

Outcome = tuple[list[EntityDecision], list[RelationDecision]]


def answer_models(ctx: RecordContext) -> dict[str, Any]:
    return typed_answers(tuple(ctx.schema.entity_types), tuple(ctx.schema.relation_types), ctx.rules.profile)


def named_entities(items: Sequence[Any]) -> list[NamedEntity]:
    """A typed answer's entities (`TypedMention`s) as `ie.claims` grounds them."""
    return [NamedEntity(i.text, i.type, i.confidence, i.evidence) for i in items]


def named_relations(items: Sequence[Any]) -> list[NamedRelation]:
    """A typed answer's relations or triples (`RelationItem`s, `TripleItem`s) as `ie.claims` grounds them."""
    return [NamedRelation(i.head, i.tail, i.relation, i.confidence, getattr(i, "evidence", ""),
                          getattr(i, "head_type", None), getattr(i, "tail_type", None)) for i in items]


async def direct(record: Record, ctx: RecordContext) -> Outcome:
    [c] = await ctx.ask("direct", answer_models(ctx)["direct"], role="direct", agent=AgentId("direct"),
                        params=ctx.params("extract", 2), type_list=type_list(ctx.schema))
    return uncontested(joint(ctx, c.value, AgentId("direct"))[0]), []


def joint(ctx: RecordContext, value: Any, agent: AgentId) -> tuple[list[EntityClaim], list[RelationClaim]]:
    """A direct or one-step answer (None: invalid) as grounded entity and relation claims."""
    if value is None:
        return [], []
    entities, relations, ungrounded = joint_claims(ctx.text, named_entities(value.entities),
                                                   named_relations(getattr(value, "relations", [])), ctx.schema,
                                                   ctx.rules, agent)
    ctx.ungrounded += ungrounded
    return entities, relations


async def one_step(record: Record, ctx: RecordContext) -> Outcome:
    if not ctx.schema.relation_types:
        return await direct(record, ctx)
    [c] = await ctx.ask("one_step", answer_models(ctx)["one_step"], role="one_step", agent=AgentId("one-step"),
                        params=ctx.params("extract", 2), type_list=type_list(ctx.schema),
                        relation_list=relation_list(ctx.schema))
    entities, relations = joint(ctx, c.value, AgentId("one-step"))
    rels = uncontested(relations)
    return with_arguments(uncontested(entities), rels), rels


async def direct_re(record: Record, ctx: RecordContext) -> Outcome:
    [c] = await ctx.ask("direct_re", answer_models(ctx)["direct_re"], role="direct_re", agent=AgentId("direct-re"),
                        params=ctx.params("extract", 2), type_list=type_list(ctx.schema),
                        relation_list=relation_list(ctx.schema))
    claims, ungrounded = named_relation_claims(ctx.text, named_relations(c.value.triples if c.ok else []),
                                               ctx.schema, ctx.rules, [], AgentId("direct-re"))
    ctx.ungrounded += ungrounded
    rels = uncontested(claims)
    return with_arguments([], rels), rels
