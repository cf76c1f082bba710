"""Name extent check (`extent_check_words`): a settled mention of that many words or more goes back to a type
agent, which copies the name inside it; the name, grounded inside the mention and shorter, replaces it.

Why: a small model's type agents drag titles, job words and the organization or place around a name into the
mention ("Navy Capt. Michael Coats", "Naples in Campania"), and the likelihood Summarizer scores a span's type,
not its extent, so such a mention often wins its boundary conflict. The check turns more wrong mentions into
gold ones than it cuts gold ones (docs/DESIGN.md, the teacher, has what it did and how its threshold and prompt
were chosen). Cost: one short call per distinct long mention, about one a sentence.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from string import Template

from ie.claims import Arg, EntityDecision
from ie.mentions import ground
from ie.records import ExtentLog
from teacher.answers import agent_answers
from teacher.context import RecordContext
from teacher.likelihood_judge import type_words
from teacher.type_agents import ner_agent_name


async def name_in(ctx: RecordContext, mention: str, etype: str) -> str | None:
    """The type agent's copy of the name inside `mention`; None if it gave no valid answer."""
    word = type_words(ctx.schema)[etype][0]
    [c] = await ctx.ask("extent", agent_answers(ctx.rules.profile).extent, role="extent", agent=ner_agent_name(etype),
                        params=ctx.params("extract"), own_context=True, mention=mention,
                        word=word, instruction=Template(ctx.cfg.extent_instruction).safe_substitute(word=word))
    return c.value.name if c.ok else None


def inner_span(ctx: RecordContext, arg: Arg, name: str) -> Arg | None:
    """`name` grounded inside `arg` (the first such occurrence), if it is shorter than `arg`."""
    for s in ground(ctx.text, name, ctx.rules, ctx.type_names):
        if arg.start <= s.start and s.end <= arg.end and (s.start, s.end) != arg.span:
            return Arg(s.start, s.end, arg.type, s.text)
    return None


async def trim_names(ctx: RecordContext, entities: Sequence[EntityDecision]) -> list[EntityDecision]:
    """The entities with each long mention cut to the name its type agent finds inside it (every occurrence);
    each check, trimmed or not, goes to the transcript's `extents`."""
    words = ctx.cfg.extent_check_words
    if not words:
        return list(entities)
    args = [d.claim.arg for d in entities]
    long = sorted({(a.text, a.type) for a in args if len(a.text.split()) >= words})
    names = dict(zip(long, await asyncio.gather(*(name_in(ctx, text, etype) for text, etype in long))))
    trimmed: dict[tuple[str, str], str] = {}
    kept: dict[Arg, EntityDecision] = {}
    for d in entities:
        key = (d.claim.arg.text, d.claim.arg.type)
        inner = inner_span(ctx, d.claim.arg, name) if (name := names.get(key)) else None
        if inner is not None:
            trimmed[key] = inner.text
            d = replace(d, claim=replace(d.claim, arg=inner))
        kept.setdefault(d.claim.arg, d)
    ctx.transcript.extents += [ExtentLog(mention=text, type=etype, name=names[(text, etype)],
                                         trimmed_to=trimmed.get((text, etype))) for text, etype in long]
    return list(kept.values())
