"""The Summarizer by likelihood (`summarizer: likelihood`): an open entity conflict goes to the option whose
type the model finds most probable for its span, asked in one word what the mention is in this text. A label
conflict (one span) goes to the span's most probable type even if no agent claimed it: where the two differ,
the span's own best type is the gold one more often than the claimed one (docs/DESIGN.md, the teacher).

Why: with a small backbone the generated verdict (a letter, a confidence, a reason) is close to random, while
the probability of a type's plain word ("person", "date") ranks the right type first for most real entities.
One call per distinct span, a one-token answer after the sentence's shared prefix: a fraction of a
generated verdict's cost. Relation conflicts, and any span the endpoint cannot score, still go to the
generated Summarizer.

The same scores settle the cross-task side (`checks`): an entity a relation requires, missing from NER or
typed otherwise there, is accepted only if its required type is its span's most probable answer, since the type
agents accept nearly everything a relation asks for, wrong types included.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ie.claims import AgentId, Arg, C, EntityClaim
from ie.config import TaskSchema, words_of_name
from ie.llm.choice import ChoiceScores
from teacher.alignment import Check
from teacher.conflicts import Conflict, Position
from teacher.context import RecordContext

NOT_ENTITY = "none"
LIKELIHOOD_SUMMARIZER = AgentId("summarizer", "likelihood")


def type_words(schema: TaskSchema) -> dict[str, list[str]]:
    """Option -> the words that mean it: each entity type's `words` (default the words of its name,
    `ie.config.words_of_name`), and "none"."""
    words = {name: spec.words or words_of_name(name) for name, spec in schema.entity_types.items()}
    return {**words, NOT_ENTITY: [NOT_ENTITY]}


def type_menu(schema: TaskSchema) -> str:
    """The answer words of each type with two of its config examples: 'organization (like "NASA" or "AP")'.
    The examples ground the words: without them the judge often calls "AP" or "Congress" a location."""
    items = []
    for name, words in type_words(schema).items():
        if name == NOT_ENTITY:
            continue
        examples = " or ".join(f'"{e}"' for e in schema.entity_types[name].examples[:2])
        items.append(" / ".join(words) + (f" (like {examples})" if examples else ""))
    return "; ".join(items)


async def span_scores(ctx: RecordContext, mention: str) -> ChoiceScores | None:
    [c] = await ctx.choose("judge", type_words(ctx.schema), role="summarizer", agent=LIKELIHOOD_SUMMARIZER,
                           mention=mention, types=type_menu(ctx.schema), none=ctx.cfg.judge_none)
    return c.value


def verdict(conflict: Conflict[C], scores: dict[str, ChoiceScores]) -> Position | None:
    """The option whose (span, type) is most probable; None (no verdict) when a span has no scores. "Not an
    entity" wins only when it beats every option on each of their spans. A label conflict (one span) goes to
    the span's most probable answer even when no agent claimed that type: the agents only put the span up."""
    best: tuple[float, int] | None = None
    rejected, claimed = True, set[str]()
    for i, option in enumerate(conflict.options):
        claim = option.claims[0]
        if not isinstance(claim, EntityClaim) or claim.arg.text not in scores:
            return None
        claimed.add(claim.arg.type)
        p = scores[claim.arg.text].probabilities
        rejected &= p[NOT_ENTITY] > p[claim.arg.type]
        if best is None or p[claim.arg.type] > best[0]:
            best = (p[claim.arg.type], i)
    assert best is not None  # a conflict has options
    if conflict.kind == "label":  # every option has this same span, so `p` holds all its scores
        top = scores[claim.arg.text].best
        if top != NOT_ENTITY and top not in claimed:
            return Position(0, p[top], f"likelihood {p[top]:.2f}, a type no agent claimed", 0, retype=top)
    if rejected:
        return Position(None, 1.0 - best[0], "likelihood: not an entity", 0)
    return Position(best[1], best[0], f"likelihood {best[0]:.2f}", 0)


async def scores_of(ctx: RecordContext, mentions: set[str]) -> dict[str, ChoiceScores]:
    """Scores by mention text, for those the endpoint could score (a repeated span is a cache hit)."""
    ordered = sorted(mentions)
    found = await asyncio.gather(*(span_scores(ctx, m) for m in ordered))
    return {m: s for m, s in zip(ordered, found) if s is not None}


async def checks(ctx: RecordContext, required: Sequence[Arg]) -> dict[Arg, Check]:
    """Alignment checks: accepted when the required type is the span's most probable answer (an unscored span
    is left unchecked, which alignment counts as rejected)."""
    scores = await scores_of(ctx, {a.text for a in required})
    found = {}
    for arg in required:
        if arg.text in scores:
            found[arg] = Check(scores[arg.text].best == arg.type, scores[arg.text].probabilities[arg.type])
    return found


async def judge(ctx: RecordContext, conflicts: Sequence[Conflict[C]]) -> dict[str, Position]:
    """Verdicts by conflict id for the entity conflicts it can score."""
    scores = await scores_of(ctx, {o.claims[0].arg.text for c in conflicts for o in c.options
                                   if isinstance(o.claims[0], EntityClaim)})
    verdicts = {}
    for conflict in conflicts:
        position = verdict(conflict, scores)
        if position is not None:
            verdicts[conflict.id] = position
    return verdicts
