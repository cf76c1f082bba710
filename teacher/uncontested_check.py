"""Uncontested mention check (`check_uncontested`): a mention that only one type agent listed meets no conflict,
so no debate and no Summarizer ever sees it. With it on, the likelihood Summarizer scores each such mention as
it scores a conflict's span, in one word what the mention is in this text: its type kept when that is the most
probable answer, the mention dropped when "none" is, retyped when another type is.

Why: on SciERC the 1.5B's Task agent lists clauses ("build our system around a noisy-channel architecture") and
its Generic agent "this paper"; most of these wrong mentions were uncontested (docs/RESULTS.md, the SciERC
pairing). Cost: one one-token call per distinct uncontested mention, after the sentence's shared prefix.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ie.claims import UNCONTESTED, EntityDecision, Settlement
from ie.llm.choice import ChoiceScores
from ie.records import UncontestedCheckLog
from teacher.context import RecordContext
from teacher.likelihood_judge import LIKELIHOOD_SUMMARIZER, NOT_ENTITY, scores_of

CHECKED = Settlement("summarizer")


def checked(decision: EntityDecision, scores: ChoiceScores) -> EntityDecision | None:
    """The decision kept, retyped to its span's most probable type, or None when "none" is most probable."""
    top = scores.best
    claim = decision.claim
    if top == claim.arg.type:
        return decision
    if top == NOT_ENTITY:
        return None
    retyped = replace(claim, arg=replace(claim.arg, type=top), agent=LIKELIHOOD_SUMMARIZER)
    return EntityDecision(retyped, (scores.probabilities[top],), CHECKED)


async def check_uncontested(ctx: RecordContext, entities: Sequence[EntityDecision]) -> list[EntityDecision]:
    """The entities with each uncontested one checked (see `checked`); a mention the endpoint cannot score is
    kept. Each check goes to the transcript's `checks`."""
    if not ctx.cfg.check_uncontested:
        return list(entities)
    scores = await scores_of(ctx, {d.claim.arg.text for d in entities if d.settled == UNCONTESTED})
    kept: list[EntityDecision] = []
    logged: set[tuple[str, str]] = set()
    for d in entities:
        arg = d.claim.arg
        if d.settled != UNCONTESTED or arg.text not in scores:
            kept.append(d)
            continue
        span = scores[arg.text]
        after = checked(d, span)
        if after is not None:
            kept.append(after)
        if (arg.text, arg.type) not in logged:  # a repeated mention is one check
            logged.add((arg.text, arg.type))
            outcome = "dropped" if after is None else "kept" if after is d else "retyped"
            ctx.transcript.checks.append(UncontestedCheckLog(
                mention=arg.text, type=arg.type, outcome=outcome, verdict=span.best,
                probability=round(span.probabilities[span.best], 4)))
    return kept
