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
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from ie.claims import AgentId, NamedEntity, NamedRelation, assemble, flatten, joint_claims, uncontested, with_arguments
from ie.config import DatasetConfig, TaskSchema
from ie.datasets.tokens import token_offsets
from ie.llm.client import TightAnswer
from ie.mentions import MentionProfile, MentionRules
from ie.record_stats import RecordStats
from ie.records import LabelledRecord
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


def _relation_item(head: str, head_type: str, relation: str, tail: str, tail_type: str,
                   with_types: bool) -> list[str]:
    return [head, head_type, relation, tail, tail_type] if with_types else [head, relation, tail]


def output_format(schema: TaskSchema) -> str:
    """The answer format as the prompt shows it, in the compact JSON the student writes: an entity is its
    [text, type], a relation its [head, type, tail], each type written after the text it types."""
    relation = _relation_item("<head entity text>", "<head entity type>", "<relation type>", "<tail entity text>",
                              "<tail entity type>", names_argument_types(schema))
    return json.dumps({"entities": [["<exact text>", "<entity type>"]], "relations": [relation]},
                      ensure_ascii=False, separators=SEPARATORS)


def build_messages(text: str, schema: TaskSchema) -> list[dict[str, str]]:
    """System + user chat messages asking the student to label `text` (the text goes in as delimited data)."""
    system, user = _template_sections()
    return [
        {"role": "system", "content": system.format(output_format=output_format(schema), **describe_schema(schema))},
        {"role": "user", "content": user.format(text=text)},
    ]


def render_answer(record: Record, schema: TaskSchema) -> str:
    """The record's labels as the student's compact JSON answer: one [text, type] per entity, in text order;
    relations name their arguments' types only where the schema leaves them open (`names_argument_types`)."""
    entities: list[list[str]] = []
    for e in sorted(record.entities, key=lambda e: (e.start, e.end, e.type)):
        if [e.text, e.type] not in entities:
            entities.append([e.text, e.type])
    relations: list[list[str]] = []
    with_types = names_argument_types(schema)
    for r in record.relations:
        h, t = record.entities[r.head], record.entities[r.tail]
        item = _relation_item(h.text, h.type, r.type, t.text, t.type, with_types)
        if item not in relations:
            relations.append(item)
    return json.dumps({"entities": entities, "relations": relations}, ensure_ascii=False, separators=SEPARATORS)


def to_example(record: Record, schema: TaskSchema) -> list[dict[str, str]]:
    """A full training conversation: the prompt plus the teacher's labels as the assistant turn."""
    return build_messages(record.text, schema) + [{"role": "assistant", "content": render_answer(record, schema)}]


@cache
def _answer_model_cached(schema_json: str, profile: MentionProfile) -> type[BaseModel]:
    schema = TaskSchema.model_validate_json(schema_json)
    mention: Any = Annotated[str, Field(max_length=profile.max_chars or MAX_MENTION_CHARS)]
    etype: Any = Literal[tuple(schema.entity_types)]
    relation: Any = tuple[str, str, str]
    max_relations = 0
    if schema.relation_types:
        rtype: Any = Literal[tuple(schema.relation_types)]
        relation = (tuple[mention, etype, rtype, mention, etype] if names_argument_types(schema)
                    else tuple[mention, rtype, mention])
        max_relations = profile.relations_per_sentence or MAX_ITEMS
    # Both lists default to empty, so an answer cut off at the token limit before its "relations" still keeps its
    # complete entities (`ie.llm.truncated`) instead of failing validation and being re-asked into the same cut.
    entities = (list[tuple[mention, etype]], Field(default_factory=list,
                                                   max_length=profile.items_per_sentence or MAX_ITEMS))
    relations = (list[relation], Field(default_factory=list, max_length=max_relations))
    return create_model("StudentAnswer", __base__=TightAnswer, entities=entities, relations=relations)


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
        return answer.model_dump(), None
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


def _items(obj: dict, key: str, arity: int, stats: ParseStats) -> list[list[str]]:
    """`obj[key]`'s items that are lists of `arity` strings; any other item is counted invalid."""
    raw = obj.get(key) or []
    if not isinstance(raw, list):
        stats.invalid += 1
        return []
    items = [list(item) for item in raw
             if isinstance(item, (list, tuple)) and len(item) == arity and all(isinstance(a, str) for a in item)]
    stats.invalid += len(raw) - len(items)
    return items


def mention_rules(dataset: DatasetConfig) -> MentionRules:
    """The dataset's mention rules (its `mentions:` section), the teacher's own, so the student grounds alike."""
    return MentionRules(dataset.mentions)


def _named(obj: dict, schema: TaskSchema, stats: ParseStats) -> tuple[list[NamedEntity], list[NamedRelation]]:
    """The answer's items as `ie.claims` grounds them; malformed items and unknown types are counted, not kept."""
    entities = [NamedEntity(text, etype) for text, etype in _items(obj, "entities", 2, stats)]
    with_types = names_argument_types(schema)
    relations = []
    for args in _items(obj, "relations", 5 if with_types else 3, stats):
        head, head_type, rtype, tail, tail_type = args if with_types else (args[0], None, args[1], args[2], None)
        relations.append(NamedRelation(head, tail, rtype, head_type=head_type, tail_type=tail_type))
    known_entities = [e for e in entities if e.type in schema.entity_types]
    known_relations = [r for r in relations if r.relation in schema.relation_types]
    stats.invalid += len(entities) - len(known_entities) + len(relations) - len(known_relations)
    return known_entities, known_relations


def parse_answer(text: str, answer: str | dict | BaseModel, schema: TaskSchema, record_id: str = "",
                 rules: MentionRules | None = None, tokens: list[str] | None = None) -> LabelledRecord:
    """A student answer as a grounded record, post-processed exactly as the teacher's one-step baseline
    (`ie.claims.joint_claims`: every occurrence, arguments snapped to known entities, closest pair; implied
    arguments added; flat typing; `ie.claims.assemble`). Counts land in the record's `stats`
    (`ungrounded`, `invalid`, `error`). Never raises for a bad answer: an unusable one gives a record with no
    labels and `error` set. `rules`: `mention_rules(dataset)`; `tokens`: the record's tokens, if any."""
    stats = ParseStats()
    obj, stats.error = _load_answer(answer)
    bounds = tuple(token_offsets(tokens)) if tokens and " ".join(tokens) == text else ()
    rules = replace(rules or MentionRules(), tokens=bounds)
    entities, relations, ungrounded = joint_claims(text, *_named(obj, schema, stats), schema, rules,
                                                   AgentId("student"))
    rels = uncontested(relations)
    ents = with_arguments(uncontested(entities), rels)
    if not schema.nested_entities:
        ents = flatten(ents)
    out = assemble(Record(id=record_id, text=text, tokens=tokens or None), ents, rels)
    return LabelledRecord(**dict(out), stats=RecordStats(ungrounded=ungrounded, invalid=stats.invalid,
                                                         **({"error": stats.error} if stats.error else {})))
