"""ie.view and ie.debate_view: what the run viewer shows of a record, built without a browser."""
from ie.config import load_config, resolve_config_path
from ie.view import record_view, run_view
from tests.debate_record import GOLD, PREDICTED

SCHEMA = load_config(resolve_config_path("conll04")).task_schema


def test_each_mention_carries_its_error_class_and_the_missed_gold_ones_follow():
    view = record_view(PREDICTED, GOLD, SCHEMA)
    assert [(s.text, s.type, s.status, s.gold) for s in view.spans] == [
        ("Jake Garn", "Peop", "correct", []), ("NASA", "Loc", "wrong_type", ["NASA (Org)"]),
        ("flew", "Other", "spurious", []), ("Houston", "Loc", "missing", [])]
    assert [(r.head_text, r.type, r.tail_text, r.status, r.head, r.tail) for r in view.relations] == [
        ("Jake Garn", "Work_For", "NASA", "wrong", 0, 1), ("Jake Garn", "Work_For", "NASA", "missing", 0, None)]
    assert view.errors == 5  # wrong type, spurious, missed; a wrong and a missed relation
    assert view.notes == ["5 calls, 1000 tokens, 12.5 s", "re:Kill skipped: no type-compatible pair among the entities"]


def test_a_mention_s_decision_is_the_part_of_the_debate_about_it():
    garn, nasa, flew, houston = record_view(PREDICTED, GOLD, SCHEMA).spans
    assert [(p.agent, p.confidence) for p in garn.decision.proposed_by] == [("ner:Peop", 0.9)]  # spacing ignored
    assert garn.decision.conflicts == [] and garn.decision.verdict == {}
    [conflict] = nasa.decision.conflicts
    assert [(s.agent, s.option) for s in conflict.stances] == [("ner:Loc", '"NASA" is Loc'),
                                                                ("ner:Org", '"NASA" is Org')]
    assert (conflict.settled_by, conflict.winner) == ("summarizer", '"NASA" is Loc')
    assert nasa.decision.verdict == {"Loc": 0.55, "Org": 0.4, "none": 0.05}
    assert flew.decision.changes == ["cross-task round 1: alignment added it as Other",
                                     "cross-task round 1: the relations needed it as Other (Δ)"]
    assert houston.decision is None


def test_a_relation_s_decision_names_the_relation_agent():
    wrong = record_view(PREDICTED, GOLD, SCHEMA).relations[0]
    assert [(p.agent, p.evidence) for p in wrong.decision.proposed_by] == [("re:Work_For", "of")]


def test_without_gold_nothing_is_marked_and_without_a_transcript_nothing_is_decided():
    plain = PREDICTED.model_copy(update={"debate": None})
    view = run_view("t", [], {"student": [plain]}, None, SCHEMA)
    [record] = view.runs["student"]
    assert not view.has_gold and record.errors == 0
    assert {s.status for s in record.spans} == {""} and all(s.decision is None for s in record.spans)
