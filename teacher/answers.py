"""Pydantic models of every agent answer. The class name is the `response_format` schema name.

Length limits go into the JSON schema (so a grammar-constrained server keeps answers short) but validation is
lenient: an over-long quote is cut, a confidence of 85 means 0.85. A weak model's near miss should not cost
a re-ask. The limits on mentions and on how many a list holds are the dataset's `mentions:` profile
(`ie.mentions.MentionProfile`), so the answers that carry mentions are built per profile.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, create_model

from ie.llm.client import SPAN_KEY
from ie.mentions import MentionProfile

MAX_STANCES = 5  # conflicts one debater, summarizer or checking agent answers on at once


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
# Completion tokens are the teacher's main cost (a small model's evidence and reasons are mostly filler):
# quotes are kept to a few words.
Quote = Annotated[str, BeforeValidator(_cut(20)), Field(json_schema_extra={"maxLength": 20})]


def _mention(max_chars: int | None) -> Any:
    """A mention, cut at `max_chars` (the profile's `max_chars`; None: any length), marked as a span of the text
    (`SPAN_KEY`: the client gives it the text's span pattern when the profile asks for one)."""
    if max_chars is None:
        return Annotated[str, Field(json_schema_extra={SPAN_KEY: True})]
    return Annotated[str, BeforeValidator(_cut(max_chars)),
                     Field(json_schema_extra={"maxLength": max_chars, SPAN_KEY: True})]


def _items(item: Any, limit: int | None = MAX_STANCES, exact: bool = False) -> Any:
    """A list of `item`, its first `limit` kept (None: any number). `exact`: the grammar asks for `limit` entries
    (a shorter list still validates: an endpoint without a grammar may write one)."""
    if limit is None:
        return list[item]
    bounds = {"minItems": limit, "maxItems": limit} if exact else {"maxItems": limit}
    return Annotated[list[item], BeforeValidator(_first(limit)), Field(json_schema_extra=bounds)]


@dataclass(frozen=True)
class AgentAnswers:
    """The answers of the type agents and the name extent check under one mention profile."""
    mention_list: type[BaseModel]
    pair_list: type[BaseModel]
    extent: type[BaseModel]


@cache
def agent_answers(profile: MentionProfile) -> AgentAnswers:
    mention, limit = _mention(profile.max_chars), profile.items_per_agent
    pairs = profile.pairs_per_agent or limit
    item = create_model("MentionItem", text=(mention, ...), confidence=(Confidence, ...), evidence=(Quote, ""))
    pair = create_model("PairItem", head=(mention, ...), tail=(mention, ...), confidence=(Confidence, ...),
                        evidence=(Quote, ""))
    return AgentAnswers(
        mention_list=create_model("MentionList", __doc__="A NER type agent: the mentions of its one type.",
                                  items=(_items(item, limit), ...)),
        pair_list=create_model("PairList", __doc__="A RE type agent: the (head, tail) pairs of its one relation.",
                               items=(_items(pair, pairs), ...)),
        extent=create_model("ExtentAnswer", __doc__="A type agent's name inside a long mention (the name extent "
                            "check).", name=(mention, ...)))


class Stance(BaseModel):
    item: int
    choice: Annotated[str, Field(json_schema_extra={"maxLength": 1})]
    confidence: Confidence
    reason: Quote = ""


@cache
def _stance(letters: str) -> type[BaseModel]:
    """A stance whose grammar offers only `letters` (validation stays lenient: `parse_letter` skips a letter that
    names no option). With any letter allowed, the 1.5B once chose an option its conflict did not have."""
    choice = Annotated[str, Field(json_schema_extra={"enum": list(letters)})]
    return create_model("Stance", __base__=Stance, choice=(choice, ...))


class Verdict(BaseModel):
    item: int
    accept: bool
    confidence: Confidence


# The answers on numbered items (conflicts, or mentions to check) list at most one entry per item asked: a small
# model otherwise goes on with verdicts on items that do not exist (1 conflict asked, 5 verdicts written). A debater
# and the Summarizer answer on every conflict asked: the 1.5B, allowed fewer, wrote one verdict for three conflicts
# and left 13 of 44 to the fallback (CoNLL04 dev 81-100, docs/RESULTS.md).
@cache
def debate_answer(items: int, letters: str) -> type[BaseModel]:
    return create_model("DebateAnswer", __doc__="A debater: keep or revise its option on each conflict it is part "
                        "of.", stances=(_items(_stance(letters), min(items, MAX_STANCES), exact=True), ...))


@cache
def summary_answer(items: int, letters: str) -> type[BaseModel]:
    return create_model("SummaryAnswer", __doc__="The summarizer: the final option of each conflict the debate left "
                        "open.", verdicts=(_items(_stance(letters), min(items, MAX_STANCES), exact=True), ...))


@cache
def verify_answer(items: int) -> type[BaseModel]:
    return create_model("VerifyAnswer", __doc__="A type agent checking mentions that relations require (cross-task "
                        "feedback / alignment).", verdicts=(_items(Verdict, min(items, MAX_STANCES)), ...))


@cache
def typed_answers(entity_types: tuple[str, ...], relation_types: tuple[str, ...], profile: MentionProfile
                  ) -> dict[str, type[BaseModel]]:
    """Single-prompt baselines' answers, with types constrained to the schema's names."""
    etype = Literal[entity_types]  # type: ignore[valid-type]
    mention, per_sentence = _mention(profile.max_chars), profile.items_per_sentence
    typed = create_model("TypedMention", text=(mention, ...), type=(etype, ...), confidence=(Confidence, ...),
                         evidence=(Quote, ""))
    direct = create_model("DirectAnswer", entities=(_items(typed, per_sentence), ...))
    models: dict[str, type[BaseModel]] = {"direct": direct}
    if relation_types:
        rtype = Literal[relation_types]  # type: ignore[valid-type]
        rel = create_model("RelationItem", head=(mention, ...), relation=(rtype, ...), tail=(mention, ...),
                           confidence=(Confidence, ...), evidence=(Quote, ""))
        triple = create_model("TripleItem", head=(mention, ...), head_type=(etype, ...), relation=(rtype, ...),
                              tail=(mention, ...), tail_type=(etype, ...), confidence=(Confidence, ...))
        models["one_step"] = create_model("OneStepAnswer", entities=(_items(typed, per_sentence), ...),
                                          relations=(_items(rel, profile.relations_per_sentence), ...))
        models["direct_re"] = create_model("TripletAnswer", triples=(_items(triple, per_sentence), ...))
    return models
