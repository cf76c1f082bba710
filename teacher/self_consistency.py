"""Self-consistency baselines: k sampled one-step answers, then a two-stage vote - first on the mention (or
argument pair), then on its type among the samples that have it. The soft variant weights each sample by
its probability (exp of the mean token log-probability) where the endpoint returns log-probabilities, and
says so in the transcript when it has to fall back to plain votes."""
from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

from ie.claims import AgentId, C, Claim, Decision, RelationClaim, Settlement, with_arguments
from ie.schema import Record
from teacher.baselines import Outcome, answer_models, joint
from teacher.context import RecordContext
from teacher.templates import relation_list, type_list

AGENT = AgentId("self-consistency")
LOGPROB_FALLBACK = "soft-self-consistency: the endpoint returned no log-probabilities; votes are unweighted"


def _label(c: Claim) -> str:
    return c.type if isinstance(c, RelationClaim) else c.arg.type


def vote(samples: Sequence[Sequence[C]], weights: Sequence[float], where: Callable[[C], Hashable]
         ) -> list[Decision[C]]:
    """Keep a `where` (span or pair) backed by more than half the total weight, with its heaviest type;
    the decision's support is the share of weight behind the kept type."""
    total = sum(weights)
    at: dict[Hashable, float] = {}
    typed: dict[Hashable, dict[str, tuple[float, C]]] = {}  # where -> type -> (weight, first claim)
    for claims, w in zip(samples, weights):
        for key in {where(c) for c in claims}:
            at[key] = at.get(key, 0.0) + w
        for (key, label), c in {(where(c), _label(c)): c for c in claims}.items():
            weight, first = typed.setdefault(key, {}).get(label, (0.0, c))
            typed[key][label] = (weight + w, first)
    decisions: list[Decision[C]] = []
    for key, weight in at.items():
        if total and weight > total / 2:
            share, claim = max(typed[key].values(), key=lambda v: v[0])
            decisions.append(Decision(claim, (share / total,), Settlement("vote")))
    return decisions


def sample_weights(logprobs: Sequence[float | None], soft: bool) -> list[float] | None:
    """Per-sample weights; None when soft voting needs log-probabilities that are missing."""
    if not soft:
        return [1.0] * len(logprobs)
    if any(lp is None for lp in logprobs):
        return None
    return [math.exp(lp) for lp in logprobs]  # type: ignore[arg-type]


async def self_consistency(record: Record, ctx: RecordContext, soft: bool = False) -> Outcome:
    name = "one_step" if ctx.schema.relation_types else "direct"
    fields = {"type_list": type_list(ctx.schema)}
    if ctx.schema.relation_types:
        fields["relation_list"] = relation_list(ctx.schema)
    comps = await ctx.ask(name, answer_models(ctx)[name], role="sample", agent=AGENT,
                          params=ctx.params("sample", 2), n=ctx.cfg.sc_samples, **fields)
    ok = [c for c in comps if c.ok]
    weights = sample_weights([c.logprob for c in ok], soft)
    if weights is None:
        ctx.note(LOGPROB_FALLBACK)
        weights = [1.0] * len(ok)
    samples = [joint(ctx, c.value, AGENT) for c in ok]
    entities = vote([s[0] for s in samples], weights, lambda c: c.arg.span)
    relations = vote([s[1] for s in samples], weights, lambda c: c.pair)
    return with_arguments(entities, relations), relations


async def soft_self_consistency(record: Record, ctx: RecordContext) -> Outcome:
    return await self_consistency(record, ctx, soft=True)
