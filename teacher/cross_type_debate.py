"""Intra-group cross-type debate (§3.3): agents whose claims conflict see each other's claims and reasons and
keep or revise, for up to `max_rounds` rounds, with equal weight. Consensus ends a conflict's debate; what
stays open goes to the Summarizer.

A round is simultaneous: every speaker answers the same state, the stances of the previous round, listed in
the round's seeded shuffled speaking order. Cost: only agents in a conflict speak, each answers all of its
conflicts in one call per round, and the round's conflicts block comes before the speaker's own part of the
prompt, so the server's prefix cache computes it once per round, not once per speaker.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, overload

from ie.claims import (
    AgentId,
    C,
    Claim,
    Decision,
    EntityClaim,
    EntityDecision,
    RelationClaim,
    RelationDecision,
    Settlement,
    uncontested,
)
from ie.records import ConflictLog, Stance
from teacher.answers import debate_answer
from teacher.conflicts import (
    Conflict,
    Position,
    entity_conflicts,
    entity_label,
    letter,
    option_letters,
    parse_letter,
    relation_conflicts,
    render_conflicts,
)
from teacher.context import RecordContext
from teacher.likelihood_judge import LIKELIHOOD_SUMMARIZER
from teacher.summarizer import fallback, summarize

HIGHEST_CONFIDENCE = Settlement("highest_confidence")
Positions = dict[tuple[str, AgentId], Position]  # by (conflict id, agent)


def agent_description(ctx: RecordContext, agent: AgentId) -> str:
    types = ctx.schema.entity_types if agent.group == "ner" else ctx.schema.relation_types
    return types[agent.name].description


def initial_positions(conflicts: Sequence[Conflict[C]]) -> Positions:
    """Round 0: each agent stands by its own most confident option."""
    positions: Positions = {}
    for conflict in conflicts:
        for i, option in enumerate(conflict.options):
            claim = max(option.claims, key=lambda c: c.confidence)
            current = positions.get((conflict.id, option.agent))
            if current is None or claim.confidence > current.confidence:
                positions[(conflict.id, option.agent)] = Position(i, claim.confidence, claim.evidence, 0)
    return positions


def consensus(conflict: Conflict[C], positions: Positions) -> bool:
    return len({positions[(conflict.id, a)].choice for a in conflict.agents}) == 1


async def speak(ctx: RecordContext, agent: AgentId, conflicts: Sequence[Conflict[C]], block: str, round: int
                ) -> dict[str, Position]:
    """One agent's stances (by conflict id) on its items of the round's `block`; an invalid or missing stance,
    or one on an item the agent is not part of, is left out (the previous stance stands). Debaters keep or
    revise among the options; only the Summarizer may reject them all (§3.3) - a weak model otherwise drops
    entities both agents found."""
    mine = [i for i, c in enumerate(conflicts, 1) if agent in c.agents]
    letters = option_letters([conflicts[i - 1] for i in mine], none=False)
    [c] = await ctx.ask("debate", debate_answer(len(mine), letters), role="debater", agent=agent,
                        params=ctx.params("debate"), round=round, name=agent.name,
                        description=agent_description(ctx, agent), conflicts=block, items=", ".join(map(str, mine)),
                        fallback=True)
    stances: dict[str, Position] = {}
    for stance in c.value.stances if c.ok else []:
        if stance.item in mine:
            conflict = conflicts[stance.item - 1]
            choice = parse_letter(stance.choice, len(conflict.options))
            if choice is not None and choice is not False:
                stances.setdefault(conflict.id, Position(choice, stance.confidence, stance.reason, round))
    return stances


@overload
def chosen_claims(conflict: Conflict[EntityClaim], final: Position) -> tuple[EntityClaim, ...]: ...
@overload
def chosen_claims(conflict: Conflict[RelationClaim], final: Position) -> tuple[RelationClaim, ...]: ...
def chosen_claims(conflict: Conflict[Any], final: Position) -> tuple[Claim, ...]:
    """The winning option's claims (every occurrence), retyped if the verdict gave its span another type (only
    an entity conflict's verdict does)."""
    if final.choice is None:
        return ()
    claims = conflict.options[final.choice].claims
    if final.retype is None:
        return claims
    return tuple(replace(c, arg=replace(c.arg, type=final.retype), agent=LIKELIHOOD_SUMMARIZER)
                 for c in claims if isinstance(c, EntityClaim))


def decide(conflict: Conflict[C], final: Position, settled_by: Settlement, positions: Positions
           ) -> list[Decision[C]]:
    """The winning option's claims, backed by the confidences that chose it (the verdict's alone when it gave
    the span a type no agent claimed)."""
    if final.choice is None:
        return []
    if final.retype is not None:
        support: tuple[float, ...] = (final.confidence,)
    else:
        backing = [positions[(conflict.id, a)].confidence for a in conflict.agents
                   if positions[(conflict.id, a)].choice == final.choice]
        support = tuple(backing) + ((final.confidence,) if settled_by.how in ("summarizer", "fallback") else ())
    return [Decision(c, support or (final.confidence,), settled_by) for c in chosen_claims(conflict, final)]


def winner_label(conflict: Conflict[C], final: Position) -> str | None:
    if final.choice is None:
        return None
    if final.retype is None:
        return conflict.options[final.choice].label
    claim = chosen_claims(conflict, final)[0]
    return entity_label(claim) if isinstance(claim, EntityClaim) else None  # only an entity's span is retyped


def log_entry(conflict: Conflict[C], history: list[tuple[AgentId, Position]], settled_by: Settlement,
              final: Position) -> ConflictLog:
    return ConflictLog(
        id=conflict.id, kind=conflict.kind, options=[o.label for o in conflict.options], agents=list(conflict.agents),
        stances=[Stance(round=p.round, agent=a, choice=letter(p.choice), confidence=p.confidence, reason=p.reason)
                 for a, p in history],
        settled_by=settled_by, winner=winner_label(conflict, final))


async def debate(ctx: RecordContext, conflicts: Sequence[Conflict[C]]) -> list[Decision[C]]:
    positions = initial_positions(conflicts)
    history = {c.id: [(a, positions[(c.id, a)]) for a in c.agents] for c in conflicts}
    settled: dict[str, Settlement] = {}
    for round in range(1, ctx.cfg.max_rounds + 1):
        open_ = [c for c in conflicts if c.id not in settled]
        if not open_:
            break
        speakers = sorted({a for c in open_ for a in c.agents})
        ctx.rng.shuffle(speakers)
        block = render_conflicts(open_, positions, offer_none=False, order=speakers)
        answers = await asyncio.gather(*(speak(ctx, agent, open_, block, round) for agent in speakers))
        for agent, stances in zip(speakers, answers):
            for conflict_id, position in stances.items():
                positions[(conflict_id, agent)] = position
        for c in open_:
            history[c.id] += [(a, positions[(c.id, a)]) for a in c.agents if positions[(c.id, a)].round == round]
            if consensus(c, positions):
                settled[c.id] = Settlement("consensus_round", round)
    still_open = [c for c in conflicts if c.id not in settled]
    verdicts = await summarize(ctx, still_open, positions)
    decisions: list[Decision[C]] = []
    for c in conflicts:
        if c.id in settled:
            final = positions[(c.id, c.agents[0])]
        else:
            settled[c.id] = Settlement("summarizer" if c.id in verdicts else "fallback")
            final = verdicts.get(c.id) or fallback(c, positions)
        ctx.transcript.conflicts.append(log_entry(c, history[c.id], settled[c.id], final))
        decisions += decide(c, final, settled[c.id], positions)
    return decisions


def by_confidence(ctx: RecordContext, conflicts: Sequence[Conflict[C]]) -> list[Decision[C]]:
    """No debate (the `type-agents` baseline): each conflict goes to its most confident option."""
    decisions: list[Decision[C]] = []
    for conflict in conflicts:
        positions = initial_positions([conflict])
        best = max(range(len(conflict.options)), key=lambda i: conflict.options[i].confidence)
        final = Position(best, conflict.options[best].confidence, "highest confidence", 0)
        history = [(a, positions[(conflict.id, a)]) for a in conflict.agents]
        ctx.transcript.conflicts.append(log_entry(conflict, history, HIGHEST_CONFIDENCE, final))
        decisions += [Decision(c, (c.confidence,), HIGHEST_CONFIDENCE) for c in conflict.options[best].claims]
    return decisions


async def settle(ctx: RecordContext, free: Sequence[C], conflicts: Sequence[Conflict[C]], debated: bool
                 ) -> list[Decision[C]]:
    """Decisions for one kind of claim: undisputed ones kept, conflicts debated (or, without debate, given to
    the most confident option)."""
    if not debated:
        return uncontested(free) + by_confidence(ctx, conflicts)
    return uncontested(free) + await debate(ctx, conflicts)


async def settle_entities(ctx: RecordContext, claims: Sequence[EntityClaim], debated: bool = True
                          ) -> list[EntityDecision]:
    return await settle(ctx, *entity_conflicts(claims, ctx.schema.nested_entities), debated)


async def settle_relations(ctx: RecordContext, claims: Sequence[RelationClaim], debated: bool = True
                           ) -> list[RelationDecision]:
    return await settle(ctx, *relation_conflicts(claims, ctx.schema), debated)
