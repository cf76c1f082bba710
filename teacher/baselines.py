"""Single-prompt baselines on the same harness (prompt family, schema, grounding, post-processing):
`direct` (all entity types in one prompt, "AEiO"), `one-step` (entities and relations jointly) and
`direct-re` (relation triplets; entities are their arguments)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ie.schema import Record
from teacher.answers import typed_answers
from teacher.claims import (
    Arg,
    Decision,
    EntityClaim,
    RelationClaim,
    entity_claims,
    relation_claim,
    uncontested,
)
from teacher.context import RecordContext
from teacher.templates import relation_list, type_list

Outcome = tuple[list[Decision], list[Decision]]


def answer_models(ctx: RecordContext) -> dict[str, Any]:
    return typed_answers(tuple(ctx.schema.entity_types), tuple(ctx.schema.relation_types), ctx.rules.profile)


def typed_entities(ctx: RecordContext, items: Sequence[Any], agent: str) -> list[EntityClaim]:
    """Ground items that each name their type; one call's nested repeats of a type are dropped."""
    claims = []
    for etype in ctx.schema.entity_types:
        found, ungrounded = entity_claims(ctx.text, [i for i in items if i.type == etype], etype, agent, ctx.rules,
                                          ctx.type_names)
        claims += found
        ctx.ungrounded += ungrounded
    return claims


def named_relations(ctx: RecordContext, items: Sequence[Any], entities: Sequence[Arg], agent: str
                    ) -> list[RelationClaim]:
    claims = []
    for item in items:
        named = (getattr(item, "head_type", None), getattr(item, "tail_type", None))
        claim = relation_claim(ctx.text, item.head, item.tail, item.relation, ctx.schema, entities, ctx.rules,
                               agent, item.confidence, getattr(item, "evidence", ""), named)
        ctx.ungrounded += claim is None
        if claim is not None:
            claims.append(claim)
    return claims


def with_arguments(entities: list[Decision], relations: Sequence[Decision]) -> list[Decision]:
    """A joint answer's relations imply their arguments are entities, even when its entity list forgot them."""
    known = {d.claim.arg for d in entities}  # type: ignore[union-attr]
    added: dict[Arg, Decision] = {}
    for d in relations:
        for arg in (d.claim.head, d.claim.tail):  # type: ignore[union-attr]
            if arg not in known and arg not in added:
                added[arg] = Decision(EntityClaim(arg, d.claim.agent, d.claim.confidence), d.support, d.settled)
    return entities + list(added.values())


async def direct(record: Record, ctx: RecordContext) -> Outcome:
    [c] = await ctx.ask("direct", answer_models(ctx)["direct"], role="direct", agent="direct",
                        params=ctx.params("extract", 2), type_list=type_list(ctx.schema))
    return uncontested(joint(ctx, c.value, "direct")[0]), []


def joint(ctx: RecordContext, value: Any, agent: str) -> tuple[list[EntityClaim], list[RelationClaim]]:
    """A direct or one-step answer (None: invalid) as grounded entity and relation claims."""
    if value is None:
        return [], []
    entities = typed_entities(ctx, value.entities, agent)
    relations = getattr(value, "relations", [])
    return entities, named_relations(ctx, relations, [e.arg for e in entities], agent)


async def one_step(record: Record, ctx: RecordContext) -> Outcome:
    if not ctx.schema.relation_types:
        return await direct(record, ctx)
    [c] = await ctx.ask("one_step", answer_models(ctx)["one_step"], role="one_step", agent="one-step",
                        params=ctx.params("extract", 2), type_list=type_list(ctx.schema),
                        relation_list=relation_list(ctx.schema))
    entities, relations = joint(ctx, c.value, "one-step")
    rels = uncontested(relations)
    return with_arguments(uncontested(entities), rels), rels


async def direct_re(record: Record, ctx: RecordContext) -> Outcome:
    [c] = await ctx.ask("direct_re", answer_models(ctx)["direct_re"], role="direct_re", agent="direct-re",
                        params=ctx.params("extract", 2), type_list=type_list(ctx.schema),
                        relation_list=relation_list(ctx.schema))
    rels = uncontested(named_relations(ctx, c.value.triples if c.ok else [], [], "direct-re"))
    return with_arguments([], rels), rels
