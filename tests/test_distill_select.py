from distill.select import (
    DUPLICATE,
    EXCLUDED,
    FAILED_CALLS,
    LOW_CONFIDENCE,
    UNRESOLVED_CONFLICT,
    Exclusion,
    label_counts,
    record_confidence,
    screen,
    select,
)
from ie.config import TaskSchema
from ie.records import LabelledRecord
from ie.schema import Entity, Record, Relation

SCHEMA = TaskSchema.model_validate({
    "entity_types": {"Peop": {"description": "person"}, "Loc": {"description": "place"},
                     "Org": {"description": "organization"}},
    "relation_types": {"Live_In": {"description": "lives in", "head": ["Peop"], "tail": ["Loc"]},
                       "Kill": {"description": "killed", "head": ["Peop"], "tail": ["Peop"]}},
})


def rec(rid: str, ents: list[str], rels=(), conf: float = 0.9, item_conf: float | None = None, text=None,
        **stats) -> LabelledRecord:
    """A teacher-like record: one made-up word per entity type, all items at `item_conf` (default `conf`)."""
    words = [f"W{rid}x{k}" for k in range(len(ents))]
    body = text or " ".join(words) + " ."
    entities, pos = [], 0
    for w, t in zip(words, ents):
        entities.append(Entity(start=pos, end=pos + len(w), type=t, text=w,
                               confidence=conf if item_conf is None else item_conf))
        pos += len(w) + 1
    relations = [Relation(head=h, tail=t, type=ty, confidence=conf) for h, t, ty in rels]
    return LabelledRecord(id=rid, text=body, entities=entities if text is None else [],
                          relations=relations if text is None else [], confidence=conf, stats=stats,
                          debate={"method": "crossagentie"})


def test_screen_counts_every_reason():
    records = [
        rec("ok", ["Peop"]),
        rec("low", ["Peop"], conf=0.3),
        rec("low_item", ["Peop"], conf=0.95, item_conf=0.4),
        rec("conflict", ["Peop"], unresolved_conflicts=2),
        rec("failed", ["Peop"], conf=0.2, failed_calls=1),
        rec("dev-1", ["Peop"]),
        rec("same_text_as_test", ["Peop"], text="A  test   sentence ."),
        rec("dup_a", [], text="Twice here ."),
        rec("dup_b", [], text="Twice here ."),
    ]
    exclusion = Exclusion.from_records([Record(id="dev-1", text="elsewhere"), Record(id="t", text="A test sentence .")])
    s = screen(records, threshold=0.6, exclusion=exclusion)
    assert [r.id for r in s.passed] == ["ok", "dup_a"]
    assert s.rejected == {
        "low": [LOW_CONFIDENCE], "low_item": [LOW_CONFIDENCE], "conflict": [UNRESOLVED_CONFLICT],
        "failed": [LOW_CONFIDENCE, FAILED_CALLS], "dev-1": [EXCLUDED], "same_text_as_test": [EXCLUDED],
        "dup_b": [DUPLICATE],
    }
    assert s.summary() == {"total": 9, "passed": 2, "rejected": 7, "reasons": {
        LOW_CONFIDENCE: 3, UNRESOLVED_CONFLICT: 1, FAILED_CALLS: 1, EXCLUDED: 2, DUPLICATE: 1}}


def test_missing_confidence_fails_unless_threshold_is_zero():
    bare = LabelledRecord(id="g", text="x")
    assert record_confidence(bare) is None
    assert screen([bare], 0.5).rejected == {"g": [LOW_CONFIDENCE]}
    failed = LabelledRecord(id="g", text="x", stats={"failed_calls": 2})
    assert screen([failed], 0.0).rejected == {"g": [FAILED_CALLS]}
    assert [r.id for r in screen([failed], 0.0, max_failed_calls=2).passed] == ["g"]
    assert [r.id for r in screen([bare], 0.0).passed] == ["g"]


def _pool() -> list[Record]:
    pool = [rec(f"p{i}", ["Peop", "Loc"], [(0, 1, "Live_In")], conf=0.6 + i / 100) for i in range(10)]
    pool += [rec(f"o{i}", ["Org"], conf=0.7 + i / 100) for i in range(6)]
    pool += [rec("k0", ["Peop", "Peop"], [(0, 1, "Kill")], conf=0.61)]
    return pool


def test_select_counts_per_type_highest_confidence_first_no_record_twice():
    sel = select(_pool(), SCHEMA, ner_per_type=2, re_per_type=1, seed=0)
    ids = [r.id for r in sel.records]
    assert len(ids) == len(set(ids))
    assert sel.chosen_for["entity:Org"] == ["o5", "o4"]  # most confident first
    assert sel.chosen_for["relation:Kill"] == ["k0"]  # rarest type filled first, so nothing else takes it
    # then by fewest candidates (ties in schema order): Loc (10), Live_In (10), Peop (11), each taking the
    # best records left
    assert sel.chosen_for["entity:Loc"] == ["p9", "p8"]
    assert sel.chosen_for["relation:Live_In"] == ["p7"]
    assert sel.chosen_for["entity:Peop"] == ["p6", "p5"]
    assert len(ids) == 2 * 3 + 1 * 2 and not sel.warnings
    # A chosen record keeps all its teacher labels, whatever type it was chosen for.
    assert label_counts(sel.records) == {"entity:Loc": 5, "entity:Org": 2, "entity:Peop": 7,
                                         "relation:Kill": 1, "relation:Live_In": 5}


def test_select_warns_when_a_type_has_too_few_candidates():
    sel = select(_pool(), SCHEMA, ner_per_type=2, re_per_type=3, seed=0)
    assert sel.chosen_for["relation:Kill"] == ["k0"]
    assert sel.warnings == ["relation:Kill: wanted 3 records, only 1 available (1 passing records contain it)"]
    assert sel.candidates["relation:Kill"] == 1


def test_select_is_seeded_among_ties():
    ties = [rec(f"t{i}", ["Peop"], conf=0.8) for i in range(30)]
    picks = {seed: select(ties, SCHEMA, 5, 0, seed).chosen_for["entity:Peop"] for seed in range(4)}
    assert picks[0] == select(ties, SCHEMA, 5, 0, 0).chosen_for["entity:Peop"]
    assert len({tuple(p) for p in picks.values()}) > 1
