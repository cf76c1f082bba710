"""The Summarizer (§3.3): when a debate ends without consensus, one call weighs the agents' reasons,
confidences and the text and names each open conflict's final option (or "none is correct")."""
from __future__ import annotations

from collections.abc import Sequence

from ie.claims import AgentId, C
from teacher.answers import summary_answer
from teacher.conflicts import Conflict, Position, option_letters, parse_letter, render_conflicts
from teacher.context import RecordContext
from teacher.likelihood_judge import judge


async def summarize(ctx: RecordContext, conflicts: Sequence[Conflict[C]],
                    positions: dict[tuple[str, AgentId], Position]) -> dict[str, Position]:
    """Verdicts by conflict id, all open conflicts in one call; a conflict left unanswered is absent. With
    `summarizer: likelihood` the entity conflicts it can score are decided by `likelihood_judge` first."""
    verdicts: dict[str, Position] = {}
    if ctx.cfg.summarizer == "likelihood":
        verdicts = await judge(ctx, conflicts)
        conflicts = [c for c in conflicts if c.id not in verdicts]
    if not conflicts:
        return verdicts
    # A judge, not a debater: deterministic sampling.
    answer = summary_answer(len(conflicts), option_letters(conflicts, none=True))
    [c] = await ctx.ask("summarizer", answer, role="summarizer", agent=AgentId("summarizer"),
                        params=ctx.params("extract"), conflicts=render_conflicts(conflicts, positions), fallback=True)
    for v in c.value.verdicts if c.ok else []:
        if 1 <= v.item <= len(conflicts):
            conflict = conflicts[v.item - 1]
            choice = parse_letter(v.choice, len(conflict.options))
            if choice is not False:
                verdicts.setdefault(conflict.id, Position(choice, v.confidence, v.reason, 0))
    return verdicts


def fallback(conflict: Conflict[C], positions: dict[tuple[str, AgentId], Position]) -> Position:
    """No verdict: the option with the highest summed confidence of the agents' last stances (ties: first)."""
    totals: dict[int | None, float] = {}
    for agent in conflict.agents:
        p = positions[(conflict.id, agent)]
        totals[p.choice] = totals.get(p.choice, 0.0) + p.confidence
    best = max(totals, key=lambda k: (totals[k], -(k if k is not None else len(conflict.options))))
    return Position(best, totals[best] / len(conflict.agents), "no summarizer verdict: highest total confidence", 0)
