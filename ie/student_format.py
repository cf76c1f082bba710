"""The one student format: the prompt the student is trained on and asked with, and how its answer is read.

`build_messages` renders `prompts/student.txt` for a text; `render_answer` writes a record's labels as the
assistant turn; `parse_answer` turns an answer (raw text, dict or pydantic object) back into a grounded
`Record`. Training export (`distill.export`) and the serving client (`serve.client`) both call these, so the
prompt and the training format cannot drift; it sits in `ie` because those two stages may not import each other.
Answers are grounded as the teacher grounds its one-step answer (`ie.claims.joint_claims`, `ie.claims.assemble`),
so teacher and student are scored alike. Pure functions.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ie.claims import AgentId, NamedEntity, NamedRelation, assemble, flatten, joint_claims, uncontested, with_arguments
from ie.config import DatasetConfig, TaskSchema
from ie.datasets.tokens import token_offsets
from ie.llm.client import TightAnswer
from ie.mentions import MentionProfile, MentionRules
from ie.schema import Record

TEMPLATE_PATH = Path(__file__).resolve().parent / "prompts" / "student.txt"
_SECTION = re.compile(r"^=== (system|user) ===$", re.MULTILINE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
# The student's own ceilings where the dataset's `mentions:` profile sets none: a grammar-constrained 0.5B
# student otherwise can ramble inside a string or a list until its token limit.
MAX_MENTION_CHARS = 120
MAX_ITEMS = 50
# The student writes JSON without spaces (its answer is most of its cost; the spaces are a quarter of its tokens),
# and its answer model tells the llguidance grammar so.
SEPARATORS = TightAnswer.separators


@cache
def _template_sections() -> tuple[str, str]:
    raw = TEMPLATE_PATH.read_text(encoding="utf-8")
    parts = _SECTION.split(raw)
    sections = dict(zip(parts[1::2], parts[2::2]))
    if set(sections) != {"system", "user"}:
        raise ValueError(f"{TEMPLATE_PATH}: needs one '=== system ===' and one '=== user ===' section")
    return sections["system"].strip("\n"), sections["user"].strip("\n")


def template_sha256() -> str:
    return hashlib.sha256(TEMPLATE_PATH.read_bytes()).hexdigest()


def describe_schema(schema: TaskSchema) -> dict[str, str]:
    """The schema as the prompt lists it: one line per entity type, one per relation type."""
    ents = [f"- {name}: {spec.description}" for name, spec in schema.entity_types.items()]
    rels = []
    for name, spec in schema.relation_types.items():
        head = "|".join(spec.head) or "any"
        tail = "|".join(spec.tail) or "any"
        rels.append(f"- {name} ({head} -> {tail}): {spec.description}")
    return {"entity_types": "\n".join(ents), "relation_types": "\n".join(rels) or "- (none)"}


def names_argument_types(schema: TaskSchema) -> bool:
    """Whether the student's relations name their arguments' types: only where some relation type lets its head or
    tail be more than one entity type. Where the schema fixes them, naming them costs tokens and says nothing."""
    every = list(schema.entity_types)
    return any(len(spec.head or every) > 1 or len(spec.tail or every) > 1 for spec in schema.relation_types.values())


def _relation_item(head: str, head_type: str, tail: str, tail_type: str, with_types: bool) -> list[str]:
    return [head, head_type, tail, tail_type] if with_types else [head, tail]


def output_format(schema: TaskSchema) -> str:
    """The answer format as the prompt shows it, in the compact JSON the student writes: mentions grouped under
    their type, relations as argument lists grouped under theirs (the types are written once, not per item)."""
    answer: dict[str, Any] = {"entities": {"<entity type>": ["<exact text>"]}}
    if schema.relation_types:
        pair = _relation_item("<head entity text>", "<head entity type>", "<tail entity text>", "<tail entity type>",
                              names_argument_types(schema))
        answer["relations"] = {"<relation type>": [pair]}
    return json.dumps(answer, ensure_ascii=False, separators=SEPARATORS)


def build_messages(text: str, schema: TaskSchema) -> list[dict[str, str]]:
    """System + user chat messages asking the student to label `text` (the text goes in as delimited data)."""
    system, user = _template_sections()
    return [
        {"role": "system", "content": system.format(output_format=output_format(schema), **describe_schema(schema))},
        {"role": "user", "content": user.format(text=text)},
    ]


def render_answer(record: Record, schema: TaskSchema) -> str:
    """The record's labels as the student's compact JSON answer: each type in schema order, only where it has
    items; each mention once, in text order; relations name their arguments' types only where the schema leaves
    them open (`names_argument_types`)."""
    entities: dict[str, list[str]] = {name: [] for name in schema.entity_types}
    for e in sorted(record.entities, key=lambda e: (e.start, e.end, e.type)):
        if e.text not in entities[e.type]:
            entities[e.type].append(e.text)
    relations: dict[str, list[list[str]]] = {name: [] for name in schema.relation_types}
    with_types = names_argument_types(schema)
    for r in record.relations:
        h, t = record.entities[r.head], record.entities[r.tail]
        item = _relation_item(h.text, h.type, t.text, t.type, with_types)
        if item not in relations[r.type]:
            relations[r.type].append(item)
    answer: dict[str, Any] = {"entities": {k: v for k, v in entities.items() if v}}
    if schema.relation_types:
        answer["relations"] = {k: v for k, v in relations.items() if v}
    return json.dumps(answer, ensure_ascii=False, separators=SEPARATORS)


def to_example(record: Record, schema: TaskSchema) -> list[dict[str, str]]:
    """A full training conversation: the prompt plus the teacher's labels as the assistant turn."""
    return build_messages(record.text, schema) + [{"role": "assistant", "content": render_answer(record, schema)}]


def _grouped(name: str, types: Sequence[str], item: Any, max_items: int) -> type[BaseModel]:
    """An object with one optional list per type name (names as JSON keys; a field name need not be one)."""
    fields: dict[str, Any] = {f"t{i}": (list[item], Field(default_factory=list, alias=type_name,
                                                            max_length=max_items))
                              for i, type_name in enumerate(types)}
    return create_model(name, __config__=ConfigDict(populate_by_name=True, extra="forbid"), **fields)


@cache
def _answer_model_cached(schema_json: str, profile: MentionProfile) -> type[BaseModel]:
    schema = TaskSchema.model_validate_json(schema_json)
    mention: Any = Annotated[str, Field(max_length=profile.max_chars or MAX_MENTION_CHARS)]
    max_entities = profile.items_per_sentence or MAX_ITEMS
    # Both parts default to empty, so an answer cut off at the token limit before its "relations" still keeps its
    # complete entities (`ie.llm.truncated`) instead of failing validation and being re-asked into the same cut.
    ents = _grouped("Entities", list(schema.entity_types), mention, max_entities)
    fields: dict[str, Any] = {"entities": (ents, Field(default_factory=ents))}
    if schema.relation_types:
        etype: Any = Literal[tuple(schema.entity_types)]
        pair: Any = (tuple[mention, etype, mention, etype] if names_argument_types(schema)
                     else tuple[mention, mention])
        rels = _grouped("Relations", list(schema.relation_types), pair,
                        profile.relations_per_sentence or MAX_ITEMS)
        fields["relations"] = (rels, Field(default_factory=rels))
    return create_model("StudentAnswer", __base__=TightAnswer, **fields)


def answer_model(schema: TaskSchema, profile: MentionProfile | None = None) -> type[BaseModel]:
    """The answer model with the schema's types as enums: what goes into `response_format` (json_schema).
    Length limits are in the schema too, so a grammar-constrained server cannot ramble inside a string: the
    dataset's `mentions:` limits (`max_chars`, `items_per_sentence`, `relations_per_sentence`), else the
    student's ceilings."""
    return _answer_model_cached(schema.model_dump_json(), profile or MentionProfile())


@dataclass
class ParseStats:
    invalid: int = 0  # malformed items, unknown entity or relation types
    error: str | None = None  # the whole answer was unusable (not JSON, not an object)


def _load_answer(answer: str | dict | BaseModel) -> tuple[dict, str | None]:
    if isinstance(answer, BaseModel):
        return answer.model_dump(by_alias=True), None
    if isinstance(answer, dict):
        return answer, None
    body = _FENCE.sub("", answer.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return {}, "answer has no JSON object"
    try:
        obj = json.loads(body[start:end + 1])
    except json.JSONDecodeError as exc:
        return {}, f"answer is not valid JSON: {exc.msg} (column {exc.colno})"
    return (obj, None) if isinstance(obj, dict) else ({}, "answer is not a JSON object")


def _groups(obj: dict, key: str, types: Any, stats: ParseStats) -> list[tuple[str, Any]]:
    """(type, item) for every item under a known type of `obj[key]`; anything else is counted invalid."""
    groups = obj.get(key) or {}
    if not isinstance(groups, dict):
        stats.invalid += 1
        return []
    out = []
    for type_name, items in groups.items():
        if type_name not in types or not isinstance(items, list):
            stats.invalid += len(items) if isinstance(items, list) else 1
            continue
        out += [(type_name, item) for item in items]
    return out


def _named(obj: dict, schema: TaskSchema, stats: ParseStats) -> tuple[list[NamedEntity], list[NamedRelation]]:
    """The answer's items as `ie.claims` grounds them; malformed items and unknown types are counted, not kept."""
    entities = []
    for etype, text in _groups(obj, "entities", schema.entity_types, stats):
        if isinstance(text, str):
            entities.append(NamedEntity(text, etype))
        else:
            stats.invalid += 1
    arity = 4 if names_argument_types(schema) else 2
    relations = []
    for rtype, args in _groups(obj, "relations", schema.relation_types, stats):
        if not (isinstance(args, (list, tuple)) and len(args) == arity and all(isinstance(a, str) for a in args)):
            stats.invalid += 1
            continue
        head, head_type, tail, tail_type = args if arity == 4 else (args[0], None, args[1], None)
        relations.append(NamedRelation(head, tail, rtype, head_type=head_type, tail_type=tail_type))
    return entities, relations


def mention_rules(dataset: DatasetConfig) -> MentionRules:
    """The dataset's mention rules (its `mentions:` section), the teacher's own, so the student grounds alike."""
    return MentionRules(dataset.mentions)


def _capped(items: list, cap: int | None, stats: ParseStats) -> list:
    """The first `cap` items (the grammar caps each type's list, not the sentence's); the rest count invalid."""
    if cap is None or len(items) <= cap:
        return items
    stats.invalid += len(items) - cap
    return items[:cap]


def parse_answer(text: str, answer: str | dict | BaseModel, schema: TaskSchema, record_id: str = "",
                 rules: MentionRules | None = None, tokens: list[str] | None = None) -> Record:
    """A student answer as a grounded record, post-processed exactly as the teacher's one-step baseline
    (`ie.claims.joint_claims`: every occurrence, arguments snapped to known entities, closest pair; implied
    arguments added; flat typing; `ie.claims.assemble`). Counts land in the record's `stats`
    (`ungrounded`, `invalid`, `error`); items past the `mentions:` sentence caps count invalid. Never raises
    for a bad answer: an unusable one gives a record with no labels and `error` set. `rules`:
    `mention_rules(dataset)`; `tokens`: the record's tokens, if any."""
    stats = ParseStats()
    obj, stats.error = _load_answer(answer)
    bounds = tuple(token_offsets(tokens)) if tokens and " ".join(tokens) == text else ()
    rules = replace(rules or MentionRules(), tokens=bounds)
    named_entities, named_relations = _named(obj, schema, stats)
    named_entities = _capped(named_entities, rules.profile.items_per_sentence, stats)
    named_relations = _capped(named_relations, rules.profile.relations_per_sentence, stats)
    entities, relations, ungrounded = joint_claims(text, named_entities, named_relations, schema, rules,
                                                   AgentId("student"))
    rels = uncontested(relations)
    ents = with_arguments(uncontested(entities), rels)
    if not schema.nested_entities:
        ents = flatten(ents)
    extras = {"tokens": tokens} if tokens else {}
    out = assemble(Record(id=record_id, text=text, **extras), ents, rels)
    out_stats: dict[str, Any] = {"ungrounded": ungrounded, "invalid": stats.invalid}
    if stats.error:
        out_stats["error"] = stats.error
    return out.model_copy(update={"stats": out_stats})
