"""Inter-group cross-task debate (§3.4): NER's entities, filtered by each relation's head/tail types, are what
the RE agents consider; RE's triples, as natural-language statements ("Reagan lives in America"), go back to
the NER type agents (or, with `summarizer: likelihood`, the likelihood Summarizer), who check the entities the
relations require but NER lacks (Δ, see `alignment`); the entities they add or retype go back to the RE agents
that have not seen them. Rounds are bounded.

Cost: a feedback call is made only for a type agent with entities to check (all of them in one call), an entity
is checked once a record, and a later round re-runs only the RE agents with candidates they have neither been
shown nor named themselves: a round that changes no entity is the last.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ie.claims import Arg, EntityDecision, RelationDecision
from ie.config import TaskSchema
from ie.records import AlignmentRound
from teacher.alignment import Check, Delta, align, delta
from teacher.answers import verify_answer
from teacher.context import RecordContext
from teacher.cross_type_debate import settle_relations
from teacher.likelihood_judge import checks as likelihood_checks
from teacher.type_agents import candidates, ner_agent_name, re_agents


def statements(schema: TaskSchema, relations: Sequence[RelationDecision], arg: Arg) -> list[str]:
    rels = [d.claim for d in relations]
    return [schema.statement(r.type, r.head.text, r.tail.text) for r in rels if arg in (r.head, r.tail)]


async def verify_type(ctx: RecordContext, etype: str, args: Sequence[Arg], gap: Delta,
                      relations: Sequence[RelationDecision], round: int) -> dict[Arg, Check]:
    """One type agent checks its required entities, with the relation statements that need them as context."""
    held = {new: old.type for old, new in gap.mismatched}
    items = "\n".join(f'{i}. "{a.text}"' + (f" (now labelled {held[a]})" if a in held else "")
                      for i, a in enumerate(args, 1))
    said = list(dict.fromkeys(s for a in args for s in statements(ctx.schema, relations, a)))
    [c] = await ctx.ask("verify", verify_answer(len(args)), role="feedback", agent=ner_agent_name(etype),
                        params=ctx.params("extract"), round=round, type=etype,
                        description=ctx.schema.entity_types[etype].description, statements="; ".join(said),
                        items=items)
    checks: dict[Arg, Check] = {}
    for v in c.value.verdicts if c.ok else []:
        if 1 <= v.item <= len(args):
            checks.setdefault(args[v.item - 1], Check(v.accept, v.confidence))
    return checks


async def verify(ctx: RecordContext, gap: Delta, relations: Sequence[RelationDecision], round: int) -> dict[Arg, Check]:
    """The owning type agents check the required entities; with `summarizer: likelihood`, the likelihood
    Summarizer does (see `likelihood_judge.checks`)."""
    if ctx.cfg.summarizer == "likelihood":
        return await likelihood_checks(ctx, gap.to_check)
    by_type: dict[str, list[Arg]] = {}
    for arg in gap.to_check:
        by_type.setdefault(arg.type, []).append(arg)
    found = await asyncio.gather(*(verify_type(ctx, t, args, gap, relations, round) for t, args in by_type.items()))
    return {arg: check for checks in found for arg, check in checks.items()}


def merge(old: Sequence[RelationDecision], new: Sequence[RelationDecision], schema: TaskSchema
          ) -> list[RelationDecision]:
    """Add later rounds' relations; a repeat, or a type exclusive with one already settled, is left out."""
    kept = list(old)
    for d in new:
        c = d.claim
        clash = any(k.claim.pair == c.pair and (k.claim.type == c.type or schema.exclusive(k.claim.type, c.type))
                    for k in kept)
        if not clash:
            kept.append(d)
    return kept


def unasked(gap: Delta, asked: set[Arg]) -> Delta:
    """The part of Δ no check has been asked about yet."""
    return Delta(gap.ner_only, tuple(a for a in gap.missing if a not in asked),
                 tuple(m for m in gap.mismatched if m[1] not in asked))


def unseen(ctx: RecordContext, entities: Sequence[Arg], shown: dict[str, set[Arg]]) -> list[str]:
    """Relation types whose type-compatible candidates include an entity their agent has not yet seen."""
    specs = ctx.schema.relation_types
    return [name for name in shown
            if set(candidates(entities, specs[name].head) + candidates(entities, specs[name].tail)) - shown[name]]


async def cross_task(ctx: RecordContext, entities: list[EntityDecision], debated: bool = True,
                     feedback: bool = True, relation_types: Sequence[str] | None = None
                     ) -> tuple[list[EntityDecision], list[RelationDecision]]:
    """(entities, relations) after RE on NER's candidates (the agents of `relation_types`, default all) and up
    to `cross_task_rounds` feedback rounds; Δ before/after each round goes to the transcript. Without feedback
    (or debate), relations whose arguments NER lacks are dropped (and relation conflicts go to the most
    confident type)."""
    feedback = feedback and ctx.cfg.cross_task_rounds > 0
    relations: list[RelationDecision] = []
    names = ctx.schema.relation_types if relation_types is None else relation_types
    shown: dict[str, set[Arg]] = {name: set() for name in names}
    asked: set[Arg] = set()  # an entity the type agents judged keeps its verdict for the record
    checked: dict[Arg, Check] = {}
    for round in range(1, max(1, ctx.cfg.cross_task_rounds) + 1):
        args = [d.claim.arg for d in entities]
        pending = unseen(ctx, args, shown)
        if not pending:
            break
        claims = await re_agents(ctx, args, pending)
        for name in pending:  # what an agent was shown or named itself needs no second look
            spec = ctx.schema.relation_types[name]
            shown[name] |= set(candidates(args, spec.head) + candidates(args, spec.tail))
            shown[name] |= {a for c in claims if c.type == name for a in (c.head, c.tail)}
        relations = merge(relations, await settle_relations(ctx, claims, debated), ctx.schema)
        gap = delta(entities, relations)
        fresh = unasked(gap, asked)
        if fresh.to_check and feedback:
            checked.update(await verify(ctx, fresh, relations, round))
            asked |= set(fresh.to_check)
        entities, relations, actions = align(entities, relations, gap, checked)
        after = delta(entities, relations).as_dict()
        ctx.transcript.alignment.append(AlignmentRound.model_validate({"round": round, "before": gap.as_dict(),
                                                                       "actions": actions, "after": after}))
    return entities, relations
