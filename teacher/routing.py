"""Routing (`routing`): before the type agents, a cheap step picks the entity and relation types that occur in
the sentence, and only their agents are called, so a sentence's cost follows what it holds, not the schema's size.

`route_by: answer`: one call whose JSON answer is constrained to the schema's type names. `route_by: likelihood`:
per type, the probability of "yes" as the one-token answer to whether the text holds it (one short call each
after the sentence's shared prefix); types at `route_threshold` or above are routed. A relation type is skipped
when it was not routed, or when no routed entity type can fill its head or its tail. A router that fails, or
whose answer never validates, routes every type. What was routed, what was skipped and why, and the answer (or
the scores) go to the transcript's `routing`. `route_top_k` routes the k highest-scored types of each kind instead
of a threshold: the 1.5B's scores rank a sentence's types well, but below any one threshold (docs/RESULTS.md).
`route_by: menu` (by rank only): one call per kind, its types as a lettered menu before the text, each type scored
by the probability of its letter as the one-token answer: two short calls a sentence in place of one per type.
"""
from __future__ import annotations

import asyncio
import string
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, create_model

from ie.claims import AgentId
from ie.config import ConfigError, TaskSchema
from ie.records import LabelledRecord, RoutingLog
from ie.schema import Record
from teacher.answers import _items
from teacher.config import TeacherConfig
from teacher.context import RecordContext
from teacher.templates import type_list
from teacher.type_agents import ner_agent_name, re_agent_name

# At most 4 relation types: 99.6 % of NYT dev sentences, all of SciERC's and CoNLL04's.
MAX_RELATION_TYPES = 4
YES_NO = {"yes": ["yes"], "no": ["no"]}
NOT_ROUTED = "not routed"
NO_ARGUMENT = "no routed entity type can be its {side}"
ROUTER = AgentId("router")
MENU_LETTERS = string.ascii_uppercase  # one token each; the choice reading folds case, so 26 at most


@dataclass(frozen=True)
class Routing:
    """The types whose agents are called, and each skipped agent with its reason."""
    entity_types: tuple[str, ...]
    relation_types: tuple[str, ...]
    skipped: dict[AgentId, str] = field(default_factory=dict)
    answer: dict[str, Any] | None = None  # the router's validated answer, or P(yes) by type
    fallback: str | None = None  # why every type was routed instead (the call's error)

    def log(self) -> RoutingLog:
        """As the transcript holds it (agents by name)."""
        return RoutingLog(entity_types=list(self.entity_types), relation_types=list(self.relation_types),
                          skipped={str(agent): why for agent, why in self.skipped.items()}, answer=self.answer,
                          fallback=self.fallback)


def enabled(ctx: RecordContext) -> bool:
    return routes(ctx.cfg, ctx.schema)


def routes(cfg: TeacherConfig, schema: TaskSchema) -> bool:
    """Whether `crossagentie` routes this schema's sentences."""
    return cfg.routing == "on" or (cfg.routing == "auto" and
                                   len(schema.entity_types) + len(schema.relation_types) >= cfg.route_min_types)


def check_router(method: str, schema: TaskSchema, cfg: TeacherConfig) -> None:
    """The menu router letters a kind's types, so it cannot route a kind with more types than letters."""
    if method != "crossagentie" or cfg.route_by != "menu" or not routes(cfg, schema):
        return
    for kind, names in (("entity", schema.entity_types), ("relation", schema.relation_types)):
        if len(names) > len(MENU_LETTERS):
            raise ConfigError(f"teacher.route_by: menu letters at most {len(MENU_LETTERS)} {kind} types and the "
                              f"schema has {len(names)}; use route_by: likelihood")


@cache
def route_answer(entity_types: tuple[str, ...], relation_types: tuple[str, ...]) -> type[BaseModel]:
    """The router's answer: lists of the schema's own type names, nothing else, bounded: a small model
    otherwise repeats one name until it runs out of tokens."""
    etype = Literal[entity_types]  # type: ignore[valid-type]
    fields: dict[str, Any] = {"entity_types": (_items(etype, len(entity_types)), ...)}
    if relation_types:
        rtype = Literal[relation_types]  # type: ignore[valid-type]
        fields["relation_types"] = (_items(rtype, min(MAX_RELATION_TYPES, len(relation_types))), ...)
    return create_model("RouteAnswer", **fields)


def relation_menu(schema: TaskSchema) -> str:
    """One line per relation type; argument types only where the schema restricts them (NYT's never are)."""
    lines = []
    for name, spec in schema.relation_types.items():
        args = f" ({'|'.join(spec.head) or 'any'}, {'|'.join(spec.tail) or 'any'})" if spec.head or spec.tail else ""
        lines.append(f"- {name}{args}: {spec.description}")
    return "\n".join(lines) or "(none)"


def every_type(schema: TaskSchema, fallback: str | None = None) -> Routing:
    return Routing(tuple(schema.entity_types), tuple(schema.relation_types), fallback=fallback)


def decide(schema: TaskSchema, entity_names: Sequence[str], relation_names: Sequence[str]) -> Routing:
    """The routing of an answer (pure): routed entity types in schema order; a relation type kept when routed
    and both its head and its tail can be a routed entity type (an empty side takes any)."""
    entities = tuple(t for t in schema.entity_types if t in entity_names)
    skipped = {ner_agent_name(t): NOT_ROUTED for t in schema.entity_types if t not in entities}
    relations = []
    for name, spec in schema.relation_types.items():
        unfilled = [side for side, types in (("head", spec.head), ("tail", spec.tail))
                    if not entities or (types and not set(types) & set(entities))]
        if name not in relation_names:
            skipped[re_agent_name(name)] = NOT_ROUTED
        elif unfilled:
            skipped[re_agent_name(name)] = NO_ARGUMENT.format(side=unfilled[0])
        else:
            relations.append(name)
    return Routing(entities, tuple(relations), skipped)


async def by_answer(ctx: RecordContext) -> Routing:
    """One JSON call naming the types. The menu of types comes before the text: it is the same for every sentence,
    so a server's prefix cache computes it once (NYT: 194 new tokens a call, not 684)."""
    schema = ctx.schema
    answer = route_answer(tuple(schema.entity_types), tuple(schema.relation_types))
    [c] = await ctx.ask("route", answer, role="router", agent=ROUTER, params=ctx.params("extract"), own_context=True,
                        entity_list=type_list(schema), relation_list=relation_menu(schema), fallback=True)
    if not c.ok:
        return every_type(schema, fallback=c.error)
    value = c.value.model_dump()
    return replace(decide(schema, value["entity_types"], value.get("relation_types", [])), answer=value)


async def by_likelihood(ctx: RecordContext) -> Routing:
    """A one-token yes/no per type (the transcript's `asked` names the type); the answer is P(yes) by type. A
    type the endpoint cannot score is routed; when it can score none, every type is. By rank, a kind with at
    most `route_top_k` types is routed whole without asking (SemEval's one entity type): no score could drop it."""
    schema, threshold, top_k = ctx.schema, ctx.cfg.route_threshold, ctx.cfg.route_top_k
    asked = [("route_entity", n, s.description) for n, s in schema.entity_types.items()]
    asked += [("route_relation", n, s.description) for n, s in schema.relation_types.items()]
    sizes = Counter(t for t, _, _ in asked)
    scored = [a for a in asked if not top_k or sizes[a[0]] > top_k]
    found = await asyncio.gather(*(ctx.choose(template, YES_NO, role="router", agent=ROUTER, mention=name,
                                              name=name, description=description,
                                              entity_types=", ".join(schema.entity_types))
                                   for template, name, description in scored))
    scores = {(t, name): c.value.probabilities["yes"] for (t, name, _), [c] in zip(scored, found) if c.ok}
    if scored and not scores:
        return every_type(schema, fallback=next(c.error for [c] in found))
    kept = kept_types([(t, name) for t, name, _ in asked], scores, threshold, top_k)
    routing = decide(schema, [n for t, n in kept if t == "route_entity"], [n for t, n in kept if t != "route_entity"])
    return replace(routing, answer={name: round(p, 4) for (_, name), p in scores.items()})


async def by_menu(ctx: RecordContext) -> Routing:
    """Per kind with more than `route_top_k` types, one call: its types lettered before the text (the same for
    every sentence, so the prefix cache reads the menu once), the answer the probability of each letter; the k
    most probable types of the kind are routed. A kind whose call fails is routed whole; when every call
    fails, every type is."""
    schema, top_k = ctx.schema, ctx.cfg.route_top_k
    kinds = {"route_menu_entity": schema.entity_types, "route_menu_relation": schema.relation_types}
    asked = [kind for kind, types in kinds.items() if len(types) > top_k]
    found = await asyncio.gather(*(
        ctx.choose(kind, {name: [MENU_LETTERS[i]] for i, name in enumerate(kinds[kind])}, role="router", agent=ROUTER,
                   mention=kind.removeprefix("route_menu_"), menu=lettered_menu(kinds[kind]))
        for kind in asked))
    scores = {(kind, name): p for kind, [c] in zip(asked, found) if c.ok for name, p in c.value.probabilities.items()}
    if asked and not scores:
        return every_type(schema, fallback=found[0][0].error)
    every = [(kind, name) for kind, types in kinds.items() for name in types]
    kept = kept_types(every, scores, 0.0, top_k) | {key for key in every if key[0] in asked and key not in scores}
    routing = decide(schema, [n for k, n in kept if k == "route_menu_entity"],
                     [n for k, n in kept if k == "route_menu_relation"])
    return replace(routing, answer={name: round(p, 4) for (_, name), p in scores.items()})


def lettered_menu(types: dict[str, Any]) -> str:
    """One line per type: its letter, its name and its description."""
    return "\n".join(f"{MENU_LETTERS[i]}. {name}: {spec.description}" for i, (name, spec) in enumerate(types.items()))


def kept_types(asked: Sequence[tuple[str, str]], scores: dict[tuple[str, str], float], threshold: float,
               top_k: int = 0) -> set[tuple[str, str]]:
    """The (kind, type) pairs routed by their P(yes) (pure): with `top_k`, the k highest-scored of each kind (ties
    in schema order), else those at `threshold` or above. A type with no score counts as 1.0, so it is routed."""
    if not top_k:
        return {key for key in asked if scores.get(key, 1.0) >= threshold}
    kept: set[tuple[str, str]] = set()
    for kind in dict.fromkeys(t for t, _ in asked):
        ranked = sorted((key for key in asked if key[0] == kind), key=lambda key: -scores.get(key, 1.0))
        kept.update(ranked[:top_k])
    return kept


ROUTERS = {"answer": by_answer, "likelihood": by_likelihood, "menu": by_menu}


async def route(ctx: RecordContext) -> Routing:
    """This sentence's routing (every type when routing is off for the schema; then nothing is recorded)."""
    if not enabled(ctx):
        return every_type(ctx.schema)
    routing = await ROUTERS[ctx.cfg.route_by](ctx)
    ctx.transcript.routing = routing.log()
    return routing


def _routed(gold: Sequence[Record], predictions: Sequence[LabelledRecord]
            ) -> Iterator[tuple[RoutingLog, Record]]:
    """Each routed prediction's transcript `routing`, with the gold record of its sentence."""
    by_id = {r.id: r for r in gold}
    for pred in predictions:
        routing = pred.debate.routing if pred.debate else None
        if routing and pred.id in by_id:
            yield routing, by_id[pred.id]


def gold_types_kept(gold: Sequence[Record], predictions: Sequence[LabelledRecord]) -> dict[str, Any]:
    """Of the distinct gold entity and relation types of each routed sentence, how many its routing kept (pure):
    the recall routing can cost at most."""
    counts = {"entity_types": [0, 0], "relation_types": [0, 0]}
    for routing, truth in _routed(gold, predictions):
        for key, found in (("entity_types", {e.type for e in truth.entities}),
                           ("relation_types", {r.type for r in truth.relations})):
            counts[key][0] += len(found & set(getattr(routing, key)))
            counts[key][1] += len(found)
    return {key: {"kept": kept, "gold": total, "fraction": round(kept / total, 4) if total else None}
            for key, (kept, total) in counts.items()}


RANKED_AT = (1, 2, 4)


def gold_types_ranked(gold: Sequence[Record], predictions: Sequence[LabelledRecord], schema: TaskSchema,
                      ks: Sequence[int] = RANKED_AT) -> dict[str, dict[str, Any]]:
    """Whether a router's scores (likelihood or menu) rank, whatever the threshold (pure): for entity and for
    relation types, of the distinct gold types of each sentence routed by score, how many are among its k
    highest-scored types of that kind, against how many k types drawn at random would hold on average. A type
    with no score counts as routed (1.0)."""
    return {"entity_types": _ranked(gold, predictions, list(schema.entity_types), ks,
                                    lambda truth: {e.type for e in truth.entities}),
            "relation_types": _ranked(gold, predictions, list(schema.relation_types), ks,
                                      lambda truth: {r.type for r in truth.relations})}


def _ranked(gold: Sequence[Record], predictions: Sequence[LabelledRecord], names: list[str], ks: Sequence[int],
            gold_types: Callable[[Record], set[str]]) -> dict[str, Any]:
    top, chance, total, records = dict.fromkeys(ks, 0), dict.fromkeys(ks, 0.0), 0, 0
    for routing, truth in _routed(gold, predictions):
        scores = routing.answer
        if (len(names) < 2 or not scores or not all(isinstance(p, float) for p in scores.values())
                or not any(t in scores for t in names)):
            continue  # one type or none of this kind, or none scored (routed unasked by rank, or by an answer)
        ranked = sorted(names, key=lambda t: -scores.get(t, 1.0))
        found = gold_types(truth)
        records, total = records + 1, total + len(found)
        for k in ks:
            top[k] += len(found & set(ranked[:k]))
            chance[k] += len(found) * min(1.0, k / len(names))
    return {"records": records, "gold": total, "top": {str(k): top[k] for k in ks},
            "chance": {str(k): round(chance[k], 2) for k in ks}}
