"""What the run viewer (`ie.viewer`) shows, as typed models built by pure functions: each record's mentions and
relations with their confidence, their error class against gold (the taxonomy `ie.scoring` counts), and for a
teacher run the part of the debate that decided each of them (`ie.debate_view`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from ie.config import ScoreOptions, TaskSchema
from ie.debate_view import Decision, entity_decision, relation_decision
from ie.records import LabelledRecord
from ie.schema import Entity, Record
from ie.scoring import entity_errors, relation_key, symmetric_types

# "" = no gold to compare with; the entity error classes are `ie.scoring.NerErrors`' fields.
SpanStatus = Literal["", "correct", "wrong_type", "boundary", "boundary_and_type", "spurious", "missing"]
RelationStatus = Literal["", "correct", "wrong", "missing"]
# Type colours (HSL hues), none red: red marks errors.
HUES = (210, 140, 275, 35, 185, 90, 300, 55, 240, 160, 255, 110)


class SpanView(BaseModel):
    """A mention as shown: predicted (with its status against gold), or a gold mention the run missed."""
    start: int
    end: int
    type: str
    text: str
    confidence: float | None = None
    status: SpanStatus = ""
    gold: list[str] = Field(default_factory=list, description="the gold mentions it overlaps, as 'text (Type)', "
                            "when its boundary or type is wrong")
    decision: Decision | None = None


class RelationView(BaseModel):
    """A relation as shown; `head`/`tail` index the record's spans (None: a missed gold relation whose argument
    is not among them)."""
    type: str
    head_text: str
    tail_text: str
    head: int | None = None
    tail: int | None = None
    confidence: float | None = None
    status: RelationStatus = ""
    decision: Decision | None = None


class RecordView(BaseModel):
    id: str
    text: str
    confidence: float | None = None
    spans: list[SpanView]
    relations: list[RelationView]
    errors: int = Field(0, description="wrong and missed items against gold")
    notes: list[str] = Field(default_factory=list, description="what the run says about the record (cost, notes)")


class RunView(BaseModel):
    """The viewer's page: a title, lines about the run, the schema's types (each its colour), and the records of
    each labeller (one for a teacher or student run; a bench's methods, one to choose at a time)."""
    title: str
    about: list[str]
    hues: dict[str, int] = Field(description="entity type -> its colour's hue")
    has_gold: bool
    runs: dict[str, list[RecordView]]


def _gold_texts(entity: Entity, gold: Sequence[Entity]) -> list[str]:
    return [f"{g.text} ({g.type})" for g in gold if g.start < entity.end and entity.start < g.end]


def _spans(pred: LabelledRecord, gold: Record | None) -> tuple[list[SpanView], int]:
    """The predicted mentions, then the missed gold ones; and how many are errors."""
    debate = pred.debate
    if gold is None:
        return [SpanView(**e.model_dump(include={"start", "end", "type", "text", "confidence"}),
                         decision=entity_decision(debate, e)) for e in pred.entities], 0
    wrong, missing = entity_errors({e.key for e in gold.entities}, {e.key for e in pred.entities})
    spans = [SpanView(**e.model_dump(include={"start", "end", "type", "text", "confidence"}),
                      status=wrong.get(e.key, "correct"), decision=entity_decision(debate, e),
                      gold=_gold_texts(e, gold.entities) if e.key in wrong else [])
             for e in pred.entities]
    spans += [SpanView(start=s, end=t, type=k, text=gold.text[s:t], status="missing") for s, t, k in missing]
    return spans, len(wrong) + len(missing)


def _relations(pred: LabelledRecord, gold: Record | None, spans: list[SpanView], options: ScoreOptions,
               schema: TaskSchema) -> tuple[list[RelationView], int]:
    sym = symmetric_types(schema) if options.symmetric else frozenset()
    index = {(s.start, s.end, s.type): i for i, s in enumerate(spans)}

    def key(h: Entity, r: str, t: Entity) -> tuple:
        return relation_key(h, r, t, options.re_mode, sym)

    gold_keys = {key(*x) for x in gold.triples()} if gold else set()
    pred_keys = {key(*x) for x in pred.triples()}
    views = [RelationView(type=rel.type, head_text=h.text, tail_text=t.text, head=index.get(h.key),
                          tail=index.get(t.key), confidence=rel.confidence,
                          status=("correct" if key(h, rel.type, t) in gold_keys else "wrong") if gold else "",
                          decision=relation_decision(pred.debate, h.text, rel.type, t.text))
             for rel, (h, _, t) in zip(pred.relations, pred.triples())]
    missed = [RelationView(type=r, head_text=h.text, tail_text=t.text, head=index.get(h.key), tail=index.get(t.key),
                           status="missing")
              for h, r, t in (gold.triples() if gold else []) if key(h, r, t) not in pred_keys]
    return views + missed, sum(v.status == "wrong" for v in views) + len(missed)


def _notes(record: LabelledRecord) -> list[str]:
    s = record.stats
    cost = [f"{s.calls} calls, {s.prompt_tokens + s.completion_tokens} tokens, {s.wall_s:.1f} s"] if s.calls else []
    return cost + (record.debate.notes if record.debate else [])


def record_view(pred: LabelledRecord, gold: Record | None, schema: TaskSchema,
                options: ScoreOptions = ScoreOptions()) -> RecordView:
    """One record as the viewer shows it (pure); `gold` the same text's gold record, or None."""
    spans, span_errors = _spans(pred, gold)
    relations, relation_errors = _relations(pred, gold, spans, options, schema)
    return RecordView(id=pred.id, text=pred.text, confidence=pred.confidence, spans=spans, relations=relations,
                      errors=span_errors + relation_errors, notes=_notes(pred))


def run_view(title: str, about: list[str], runs: Mapping[str, Sequence[LabelledRecord]], gold: Sequence[Record] | None,
             schema: TaskSchema, options: ScoreOptions = ScoreOptions()) -> RunView:
    """The page (pure) of each labeller's predictions (`runs`, by name), in their order, each beside its gold
    record (by id) when `gold` is given."""
    by_id = {g.id: g for g in gold or ()}
    hues = {t: HUES[i % len(HUES)] for i, t in enumerate(schema.entity_types)}
    return RunView(title=title, about=about, hues=hues, has_gold=bool(by_id),
                   runs={name: [record_view(p, by_id.get(p.id), schema, options) for p in predictions]
                         for name, predictions in runs.items()})
