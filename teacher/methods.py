"""The method registry: name -> async fn(record, ctx) -> (entity decisions, relation decisions).

`label(record, method, ctx)` runs one and turns its decisions into the output record (confidences, flat
typing, grounded offsets) and its transcript - the same finishing for every method.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable

from ie.claims import assemble, flatten
from ie.config import TaskSchema
from ie.records import Transcript
from ie.schema import Record
from teacher.baselines import Outcome, direct, direct_re, one_step
from teacher.confidence import score
from teacher.context import RecordContext
from teacher.cross_task_debate import cross_task
from teacher.cross_type_debate import settle_entities
from teacher.name_extent import trim_names
from teacher.routing import route
from teacher.self_consistency import self_consistency, soft_self_consistency
from teacher.type_agents import ner_agents
from teacher.uncontested_check import check_uncontested

Method = Callable[[Record, RecordContext], Awaitable[Outcome]]


async def type_agents(record: Record, ctx: RecordContext) -> Outcome:
    """Mechanism 1 alone: type agents, conflicts to the most confident claim, RE agents on NER candidates."""
    entities = await settle_entities(ctx, await ner_agents(ctx), debated=False)
    if not ctx.schema.relation_types:
        return entities, []
    return await cross_task(ctx, entities, debated=False, feedback=False)


async def crossagentie(record: Record, ctx: RecordContext) -> Outcome:
    """Routing, type agents, cross-type debate (+ Summarizer), uncontested mention check, name extent check,
    cross-task debate with alignment."""
    routed = await route(ctx)
    settled = await settle_entities(ctx, await ner_agents(ctx, routed.entity_types))
    entities = await trim_names(ctx, await check_uncontested(ctx, settled))
    if not ctx.schema.relation_types:
        return entities, []
    return await cross_task(ctx, entities, relation_types=routed.relation_types)


METHODS: dict[str, Method] = {
    "direct": direct,
    "one-step": one_step,
    "direct-re": direct_re,
    "type-agents": type_agents,
    "self-consistency": self_consistency,
    "soft-self-consistency": soft_self_consistency,
    "crossagentie": crossagentie,
}
NEEDS_RELATIONS = frozenset({"direct-re"})


def check_method(method: str, schema: TaskSchema) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    if method in NEEDS_RELATIONS and not schema.relation_types:
        raise ValueError(f"method {method}: the schema has no relation types; use direct")


async def label(record: Record, method: str, ctx: RecordContext) -> tuple[Record, Transcript]:
    """(the labelled record, its transcript)."""
    entities, relations = await METHODS[method](record, ctx)
    entities, relations = score(entities, relations)
    if not ctx.schema.nested_entities:
        entities = flatten(entities)
    return assemble(record, entities, relations), ctx.transcript

