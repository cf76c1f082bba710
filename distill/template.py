"""The one student prompt: what the student is trained on and what it is asked at inference.

`build_messages` renders `prompts/student.txt` for a text; `render_answer` writes a record's labels as the
assistant turn; `parse_answer` turns an answer (raw text, dict or pydantic object) back into a grounded
`Record`. Training export (`distill.export`) and the serving client (`serve.client`) both call these, so the
prompt and the training format cannot drift. Mentions are grounded with the teacher's own post-processing
(`teacher.mentions`: cleaning, plausibility, every exact occurrence, flat-overlap resolution). Pure functions.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ie.config import DatasetConfig, TaskSchema
from ie.schema import Entity, Record, Relation
from teacher.mentions import MentionRules, ground, resolve_overlaps

TEMPLATE_PATH = Path(__file__).resolve().parent / "prompts" / "student.txt"
_SECTION = re.compile(r"^=== (system|user) ===$", re.MULTILINE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
OUTPUT_FORMAT = json.dumps(
    {
        "entities": [{"text": "<exact text>", "type": "<entity type>"}],
        "relations": [{"head": "<entity text>", "head_type": "<entity type>", "type": "<relation type>",
                       "tail": "<entity text>", "tail_type": "<entity type>"}],
    },
    ensure_ascii=False,
)


class AnswerEntity(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str
    type: str


class AnswerRelation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    head: str
    head_type: str
    type: str
    tail: str
    tail_type: str


class StudentAnswer(BaseModel):
    """The answer format, with types as free strings (what `parse_answer` accepts)."""
    model_config = ConfigDict(extra="ignore")
    entities: list[AnswerEntity] = Field(default_factory=list)
    relations: list[AnswerRelation] = Field(default_factory=list)


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


def build_messages(text: str, schema: TaskSchema) -> list[dict[str, str]]:
    """System + user chat messages asking the student to label `text` (the text goes in as delimited data)."""
    system, user = _template_sections()
    return [
        {"role": "system", "content": system.format(output_format=OUTPUT_FORMAT, **describe_schema(schema))},
        {"role": "user", "content": user.format(text=text)},
    ]


def render_answer(record: Record) -> str:
    """The record's labels as the student's JSON answer: one entity per (text, type), in text order."""
    entities: list[dict[str, str]] = []
    for e in sorted(record.entities, key=lambda e: (e.start, e.end, e.type)):
        item = {"text": e.text, "type": e.type}
        if item not in entities:
            entities.append(item)
    relations: list[dict[str, str]] = []
    for r in record.relations:
        h, t = record.entities[r.head], record.entities[r.tail]
        item = {"head": h.text, "head_type": h.type, "type": r.type, "tail": t.text, "tail_type": t.type}
        if item not in relations:
            relations.append(item)
    return json.dumps({"entities": entities, "relations": relations}, ensure_ascii=False)


def to_example(record: Record, schema: TaskSchema) -> list[dict[str, str]]:
    """A full training conversation: the prompt plus the teacher's labels as the assistant turn."""
    return build_messages(record.text, schema) + [{"role": "assistant", "content": render_answer(record)}]


@cache
def _answer_model_cached(schema_json: str) -> type[BaseModel]:
    schema = TaskSchema.model_validate_json(schema_json)
    etype = Literal[tuple(schema.entity_types)]  # type: ignore[valid-type]
    ent = create_model("Entity", text=(str, ...), type=(etype, ...))
    if schema.relation_types:
        rtype = Literal[tuple(schema.relation_types)]  # type: ignore[valid-type]
        rel = create_model("Relation", head=(str, ...), head_type=(etype, ...), type=(rtype, ...),
                           tail=(str, ...), tail_type=(etype, ...))
        rel_field: Any = (list[rel], ...)  # type: ignore[valid-type]
    else:
        rel_field = (list[AnswerRelation], Field(default_factory=list, max_length=0))
    return create_model("StudentAnswer", entities=(list[ent], ...), relations=rel_field)  # type: ignore


def answer_model(schema: TaskSchema) -> type[BaseModel]:
    """The answer model with the schema's types as enums: what goes into `response_format` (json_schema)."""
    return _answer_model_cached(schema.model_dump_json())


@dataclass
class ParseStats:
    ungrounded: int = 0  # mentions that are not a substring of the text
    invalid: int = 0  # malformed items, unknown types, relation arguments the schema does not allow
    error: str | None = None  # the whole answer was unusable (not JSON, not an object)
    ungrounded_mentions: list[str] = field(default_factory=list)


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


def _items(obj: dict, key: str, model: type[BaseModel], stats: ParseStats) -> list[Any]:
    raw = obj.get(key) or []
    if not isinstance(raw, list):
        stats.invalid += 1
        return []
    out = []
    for item in raw:
        try:
            out.append(model.model_validate(item))
        except ValidationError:
            stats.invalid += 1
    return out


def mention_rules(dataset: DatasetConfig) -> MentionRules:
    """The teacher's mention rules for this dataset (its `teacher:` section), so the student grounds alike."""
    section, rules = dataset.section("teacher"), MentionRules()
    return MentionRules(section.get("require_capital_or_digit", rules.require_capital_or_digit),
                        section.get("max_mention_words", rules.max_words))


@dataclass(frozen=True)
class _Grounder:
    text: str
    schema: TaskSchema
    rules: MentionRules
    stats: ParseStats

    def __call__(self, mention: str, etype: str) -> list[tuple[int, int, str]]:
        spans = ground(self.text, mention, self.rules, self.schema.entity_types)
        if not spans:
            self.stats.ungrounded += 1
            self.stats.ungrounded_mentions.append(mention)
        return [(s.start, s.end, etype) for s in spans]


def _closest(heads: list[tuple[int, int, str]], tails: list[tuple[int, int, str]]):
    pairs = [(h, t) for h in heads for t in tails if h[:2] != t[:2]]
    return min(pairs, key=lambda p: (abs(p[0][0] - p[1][0]), p[0][0], p[1][0]), default=None)


def ground_answer(answer: StudentAnswer, grounder: _Grounder):
    """Entity keys (start, end, type): every occurrence of each mention, relation arguments included; for
    flat schemas overlaps are resolved as the teacher does (longest, then earliest). Each relation links the
    closest surviving occurrences of its head and tail."""
    schema, stats = grounder.schema, grounder.stats
    keys: set[tuple[int, int, str]] = set()
    for e in answer.entities:
        if e.type not in schema.entity_types:
            stats.invalid += 1
            continue
        keys.update(grounder(e.text, e.type))
    args = []
    for r in answer.relations:
        spec = schema.relation_types.get(r.type)
        if spec is None or {r.head_type, r.tail_type} - set(schema.entity_types) \
                or not spec.allows(r.head_type, r.tail_type):
            stats.invalid += 1
            continue
        args.append((grounder(r.head, r.head_type), r.type, grounder(r.tail, r.tail_type)))
        keys.update(args[-1][0] + args[-1][2])
    if not schema.nested_entities:
        keys = set(resolve_overlaps([((k[0], k[1]), 1.0, k) for k in keys]))
    triples: list[tuple[tuple[int, int, str], str, tuple[int, int, str]]] = []
    for heads, rtype, tails in args:
        pair = _closest([h for h in heads if h in keys], [t for t in tails if t in keys])
        if pair is not None and (pair[0], rtype, pair[1]) not in triples:
            triples.append((pair[0], rtype, pair[1]))
    return sorted(keys), triples


def parse_answer(text: str, answer: str | dict | BaseModel, schema: TaskSchema, record_id: str = "",
                 rules: MentionRules | None = None) -> Record:
    """A student answer as a grounded record; counts land in the record's `stats` (`ungrounded`, `invalid`,
    `error`). Never raises for a bad answer: an unusable one gives a record with no labels and `error` set.
    `rules`: the teacher's mention rules for the dataset (`mention_rules(dataset)`)."""
    stats = ParseStats()
    obj, stats.error = _load_answer(answer)
    parsed = StudentAnswer(entities=_items(obj, "entities", AnswerEntity, stats),
                           relations=_items(obj, "relations", AnswerRelation, stats))
    keys, triples = ground_answer(parsed, _Grounder(text, schema, rules or MentionRules(), stats))
    index = {k: i for i, k in enumerate(keys)}
    entities = [Entity(start=s, end=e, type=t, text=text[s:e]) for s, e, t in keys]
    relations = [Relation(head=index[h], tail=index[t], type=rt) for h, rt, t in triples]
    out_stats = {"ungrounded": stats.ungrounded, "invalid": stats.invalid}
    if stats.error:
        out_stats["error"] = stats.error
    if stats.ungrounded_mentions:
        out_stats["ungrounded_mentions"] = stats.ungrounded_mentions
    return Record(id=record_id, text=text, entities=entities, relations=relations, stats=out_stats)
