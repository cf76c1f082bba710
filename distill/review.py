"""Human review of teacher labels in Label Studio, before distillation (pure functions over typed models).

`tasks`: teacher records as Label Studio tasks, their mentions and relations as pre-annotations (a prediction
with the record's confidence as its score, each mention with its own); `label_config`: the labelling config
(`<Labels>` of the entity types, `<Relations>` of the relation types) those tasks need. `reviewed_records`:
Label Studio's JSON export read back into records (each task's last submitted annotation). `apply_reviewed`:
a teacher run with its reviewed records put in place, at confidence 1.0, so distill trusts them.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ie.config import TaskSchema
from ie.records import LabelledRecord
from ie.schema import Entity, Relation

TEMPLATES = Path(__file__).resolve().parent / "templates"
LABELS, TEXT = "label", "text"  # the control and object tag names of the labelling config
TRUSTED = 1.0  # the confidence of a reviewed item: a person checked it


class ReviewError(ValueError):
    """A review file that cannot be used; the message names the file, the task or record, and the field."""


class Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")  # Label Studio adds keys of its own (origin, created_at, ...)


class SpanValue(Loose):
    start: int
    end: int
    text: str
    labels: list[str]


class Region(Loose):
    """A labelled span of the text (Label Studio result type `labels`)."""
    type: Literal["labels"] = "labels"
    id: str
    from_name: str = LABELS
    to_name: str = TEXT
    value: SpanValue
    score: float | None = None


class Link(Loose):
    """A relation between two regions (result type `relation`): `right` from -> to, `left` to -> from."""
    type: Literal["relation"] = "relation"
    from_id: str
    to_id: str
    direction: Literal["right", "left", "bi"] = "right"
    labels: list[str] = Field(default_factory=list)


Result = Annotated[Region | Link, Field(discriminator="type")]


class TaskData(Loose):
    text: str
    record_id: str


class Prediction(Loose):
    model_version: str
    score: float | None = None
    result: list[Result]


class Task(Loose):
    """A task to import: the text, the record's id, the teacher's labels as a prediction."""
    data: TaskData
    predictions: list[Prediction] = Field(default_factory=list)


class Annotation(Loose):
    id: int
    result: list[Result]
    was_cancelled: bool = False


class ExportedTask(Loose):
    """A task of Label Studio's JSON export."""
    id: int
    data: TaskData
    annotations: list[Annotation] = Field(default_factory=list)


def sample(records: Sequence[LabelledRecord], n: int | None, lowest_confidence: bool, seed: int = 0
           ) -> list[LabelledRecord]:
    """The records to review: all (n None), the n the teacher was least sure of, or n at random (seeded)."""
    if n is None or n >= len(records):
        return list(records)
    if lowest_confidence:
        return sorted(records, key=lambda r: (r.confidence or 0.0, r.id))[:n]
    return random.Random(seed).sample(list(records), n)


def task(record: LabelledRecord, model_version: str) -> Task:
    """One record as a Label Studio task with the teacher's labels as its prediction."""
    regions = [Region(id=f"e{i}", value=SpanValue(start=e.start, end=e.end, text=e.text, labels=[e.type]),
                      score=e.confidence) for i, e in enumerate(record.entities)]
    links = [Link(from_id=f"e{r.head}", to_id=f"e{r.tail}", labels=[r.type]) for r in record.relations]
    return Task(data=TaskData(text=record.text, record_id=record.id),
                predictions=[Prediction(model_version=model_version, score=record.confidence,
                                        result=[*regions, *links])])


@cache
def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined)


def label_config(schema: TaskSchema) -> str:
    """The labelling config of the tasks: the schema's entity types as `<Labels>`, relation types as `<Relations>`."""
    return _environment().get_template("label_config.xml.j2").render(
        entity_types=list(schema.entity_types), relation_types=list(schema.relation_types), labels=LABELS,
        text=TEXT)


def parse_export(data: object, source: str | Path) -> list[ExportedTask]:
    """Label Studio's JSON export (a list of tasks); a malformed one names the task and the field."""
    if not isinstance(data, list):
        raise ReviewError(f"{source}: expected Label Studio's JSON export, a list of tasks")
    tasks = []
    for i, obj in enumerate(data):
        try:
            tasks.append(ExportedTask.model_validate(obj))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ReviewError(f"{source}: task [{i}]: field '{where}': {err['msg']} (only <Labels> and "
                              "<Relations> results are read: use the config `review export` wrote)") from None
    return tasks


def _record(t: ExportedTask, annotation: Annotation, source: str | Path) -> LabelledRecord:
    where = f"{source}: task {t.id} (record {t.data.record_id!r}), annotation {annotation.id}"
    regions = [r for r in annotation.result if isinstance(r, Region)]
    index = {r.id: i for i, r in enumerate(regions)}
    entities = []
    for r in regions:
        v = r.value
        if len(v.labels) != 1:
            raise ReviewError(f"{where}: region {r.id} has labels {v.labels}; give each span exactly one type")
        if t.data.text[v.start:v.end] != v.text:
            raise ReviewError(f"{where}: region {r.id}: {v.text!r} is not the text at [{v.start}, {v.end})")
        entities.append(Entity(start=v.start, end=v.end, type=v.labels[0], text=v.text))
    relations = []
    for link in (x for x in annotation.result if isinstance(x, Link)):
        if link.from_id not in index or link.to_id not in index or len(link.labels) != 1:
            raise ReviewError(f"{where}: relation {link.from_id} -> {link.to_id} needs two labelled regions and "
                              f"exactly one relation type, has {link.labels}")
        head, tail = index[link.from_id], index[link.to_id]
        head, tail = (tail, head) if link.direction == "left" else (head, tail)
        relations.append(Relation(head=head, tail=tail, type=link.labels[0]))
    return LabelledRecord(id=t.data.record_id, text=t.data.text, entities=entities, relations=relations,
                          meta={"reviewed": f"Label Studio task {t.id}, annotation {annotation.id}"})


def reviewed_records(tasks: Sequence[ExportedTask], source: str | Path) -> list[LabelledRecord]:
    """A record for each task with a submitted annotation (its last one); `meta.reviewed` names them."""
    out = []
    for t in tasks:
        submitted = [a for a in t.annotations if not a.was_cancelled]
        if submitted:
            out.append(_record(t, submitted[-1], source))
    return out


def apply_reviewed(teacher: Sequence[LabelledRecord], reviewed: Sequence[LabelledRecord], schema: TaskSchema,
                   source: str | Path) -> list[LabelledRecord]:
    """The teacher's records with each reviewed one in its place: its labels at confidence 1.0 on the teacher's
    record (its tokens kept; no stats or debate: they describe labels no longer there). A reviewed record whose id
    is not in the run, whose text differs from the run's or whose types are not the schema's is refused, naming it."""
    by_id = {r.id: r for r in teacher}
    replaced = {}
    for r in reviewed:
        where = f"{source}: reviewed record {r.id!r}"
        if r.id not in by_id:
            raise ReviewError(f"{where} is not in the teacher run; review tasks exported from this run")
        if by_id[r.id].text != r.text:
            raise ReviewError(f"{where}: its text is no longer the run's ({r.text[:40]!r} against "
                              f"{by_id[r.id].text[:40]!r}); export it from this run and review it again")
        unknown = sorted({e.type for e in r.entities} - set(schema.entity_types)
                         | {x.type for x in r.relations} - set(schema.relation_types))
        if unknown:
            raise ReviewError(f"{where}: types {unknown} are not in the schema")
        replaced[r.id] = LabelledRecord(
            id=r.id, text=r.text, tokens=by_id[r.id].tokens, meta=r.meta, confidence=TRUSTED,
            entities=[e.model_copy(update={"confidence": TRUSTED}) for e in r.entities],
            relations=[x.model_copy(update={"confidence": TRUSTED}) for x in r.relations])
    return [replaced.get(r.id, r) for r in teacher]
