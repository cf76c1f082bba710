"""Pydantic models of every agent answer. The class name is the `response_format` schema name.

Length limits go into the JSON schema (so a grammar-constrained server keeps answers short) but validation is
lenient: an over-long quote is cut, a confidence of 85 means 0.85. A weak model's near miss should not cost
a re-ask.
"""
from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, create_model

MAX_ITEMS = 5  # one agent, one type: CoNLL04 has at most 5 of a type in 97% (dev) and 98% (train) of sentences
MAX_TYPED_ITEMS = 10  # all types at once: CoNLL04 has at most 10 entities in 99.5% of sentences (dev and train)


def _unit(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = value / 100 if 1 < value <= 100 else value
        return min(1.0, max(0.0, float(value)))
    return value


def _cut(limit: int):
    return lambda v: v[:limit] if isinstance(v, str) else v


def _first(limit: int):
    return lambda v: v[:limit] if isinstance(v, list) else v


Confidence = Annotated[float, BeforeValidator(_unit), Field(json_schema_extra={"minimum": 0, "maximum": 1})]
# 40 characters hold 99.4% of CoNLL04 train entities. Completion tokens are the teacher's main cost (a small
# model's evidence and reasons are mostly filler): quotes are kept to a few words.
Mention = Annotated[str, BeforeValidator(_cut(40)), Field(json_schema_extra={"maxLength": 40})]
Quote = Annotated[str, BeforeValidator(_cut(20)), Field(json_schema_extra={"maxLength": 20})]


def _items(item: type, limit: int = MAX_ITEMS) -> Any:
    return Annotated[list[item], BeforeValidator(_first(limit)), Field(json_schema_extra={"maxItems": limit})]


class MentionItem(BaseModel):
    text: Mention
    confidence: Confidence
    evidence: Quote = ""


class MentionList(BaseModel):
    """A NER type agent: the mentions of its one type."""
    items: _items(MentionItem)


class PairItem(BaseModel):
    head: Mention
    tail: Mention
    confidence: Confidence
    evidence: Quote = ""


class PairList(BaseModel):
    """A RE type agent: the (head, tail) pairs of its one relation."""
    items: _items(PairItem)


class Stance(BaseModel):
    item: int
    choice: Annotated[str, Field(json_schema_extra={"maxLength": 1})]
    confidence: Confidence
    reason: Quote = ""


class DebateAnswer(BaseModel):
    """A debater: keep or revise its option on each conflict it is part of."""
    stances: _items(Stance)


class SummaryAnswer(BaseModel):
    """The summarizer: the final option of each conflict the debate left open."""
    verdicts: _items(Stance)


class Verdict(BaseModel):
    item: int
    accept: bool
    confidence: Confidence


class VerifyAnswer(BaseModel):
    """A type agent checking mentions that relations require (cross-task feedback / alignment)."""
    verdicts: _items(Verdict)


class ExtentAnswer(BaseModel):
    """A type agent's name inside a long mention (the name extent check)."""
    name: Mention


@cache
def typed_answers(entity_types: tuple[str, ...], relation_types: tuple[str, ...]) -> dict[str, type[BaseModel]]:
    """Single-prompt baselines' answers, with types constrained to the schema's names."""
    etype = Literal[entity_types]  # type: ignore[valid-type]
    typed = create_model("TypedMention", text=(Mention, ...), type=(etype, ...), confidence=(Confidence, ...),
                         evidence=(Quote, ""))
    direct = create_model("DirectAnswer", entities=(_items(typed, MAX_TYPED_ITEMS), ...))
    models: dict[str, type[BaseModel]] = {"direct": direct}
    if relation_types:
        rtype = Literal[relation_types]  # type: ignore[valid-type]
        rel = create_model("RelationItem", head=(Mention, ...), relation=(rtype, ...), tail=(Mention, ...),
                           confidence=(Confidence, ...), evidence=(Quote, ""))
        triple = create_model("TripleItem", head=(Mention, ...), head_type=(etype, ...), relation=(rtype, ...),
                              tail=(Mention, ...), tail_type=(etype, ...), confidence=(Confidence, ...))
        models["one_step"] = create_model("OneStepAnswer", entities=(_items(typed, MAX_TYPED_ITEMS), ...),
                                          relations=(_items(rel), ...))
        models["direct_re"] = create_model("TripletAnswer", triples=(_items(triple, MAX_TYPED_ITEMS), ...))
    return models
