"""Strict scoring on hand-computed cases: every expected number below is worked out in the comments."""
import json

import pytest

from ie.config import load_config, resolve_config_path
from ie.scoring import NerErrors, Scores, evaluate, match_records, semeval_label
from tests.score_cases import GOLD, TEXT, TEXT2, rec


def micro(result, task="ner"):
    m = getattr(result, task).micro
    return m.tp, m.fp, m.fn


def test_exact_match_scores_one():
    result = evaluate(GOLD, GOLD)
    assert result.ner.micro.f1 == result.re.micro.f1 == 1.0
    assert micro(result) == (4, 0, 0) and micro(result, "re") == (2, 0, 0)
    assert result.errors == NerErrors() and result.records == 2


def test_boundary_error_and_wrong_type():
    boundary = [rec("r1", TEXT, [(0, 2, "PER"), (12, 15, "LOC")]), GOLD[1]]  # "New" instead of "New York"
    result = evaluate(GOLD, boundary)
    assert micro(result) == (3, 1, 1)
    assert result.errors == NerErrors(boundary=1)
    wrong_type = [rec("r1", TEXT, [(0, 2, "PER"), (12, 20, "ORG")]), GOLD[1]]
    result = evaluate(GOLD, wrong_type)
    assert micro(result) == (3, 1, 1) and result.errors.wrong_type == 1 and result.errors.boundary == 0
    both = [rec("r1", TEXT, [(0, 2, "PER"), (12, 15, "ORG")]), GOLD[1]]
    assert evaluate(GOLD, both).errors.boundary_and_type == 1


def test_the_scores_json_form_is_the_dict_metrics_json_holds():
    boundary = [rec("r1", TEXT, [(0, 2, "PER"), (12, 15, "LOC")]), GOLD[1]]  # "New" for "New York", no Live_In
    result = evaluate(GOLD, boundary)

    def prf(p, r, f1, tp, fp, fn):
        return {"precision": p, "recall": r, "f1": f1, "tp": tp, "fp": fp, "fn": fn}

    expected = {
        "ner": {"micro": prf(0.75, 0.75, 0.75, 3, 1, 1),
                "per_type": {"LOC": prf(0.0, 0.0, 0.0, 0, 1, 1), "ORG": prf(1.0, 1.0, 1.0, 1, 0, 0),
                             "PER": prf(1.0, 1.0, 1.0, 2, 0, 0)}},
        "re": {"micro": prf(1.0, 0.5, 2 / 3, 1, 0, 1),
               "per_type": {"Live_In": prf(0.0, 0.0, 0.0, 0, 0, 1), "Work_For": prf(1.0, 1.0, 1.0, 1, 0, 0)},
               "mode": "strict", "symmetric_types": []},
        "errors": {"boundary": 1, "wrong_type": 0, "boundary_and_type": 0, "missing": 0, "spurious": 0},
        "records": 2,
        "unmatched_predictions": 0,
    }
    assert json.dumps(result.as_dict()) == json.dumps(expected)  # keys in this order: metrics.json unchanged
    assert Scores.model_validate_json(json.dumps({**expected, "teacher": {}})) == result  # a metrics.json read back
    gold = [sem("0", "Cause-Effect(e1,e2)")]
    semeval = evaluate(gold, gold, semeval=True).as_dict()["semeval"]
    assert list(semeval) == ["macro", "micro", "per_relation"] and list(semeval["macro"]) == ["precision", "recall", "f1"]
    assert semeval["per_relation"] == {"Cause-Effect": prf(1.0, 1.0, 1.0, 1, 0, 0)}


def test_duplicates_count_once_and_per_type():
    # r1: Bo PER twice (one tp), "New" LOC (boundary fp + the fn New York), "lives" MISC (spurious); r2 missing.
    pred = [rec("r1", TEXT, [(0, 2, "PER"), (0, 2, "PER"), (12, 15, "LOC"), (3, 8, "MISC")])]
    result = evaluate(GOLD, pred)
    assert micro(result) == (1, 2, 3)  # fn: New York, Al, Acme
    m = result.ner.micro
    assert m.precision == pytest.approx(1 / 3) and m.recall == pytest.approx(1 / 4)
    assert m.f1 == pytest.approx(2 * (1 / 3) * (1 / 4) / (1 / 3 + 1 / 4))
    per = {t: (c.tp, c.fp, c.fn) for t, c in result.ner.per_type.items()}
    assert per == {"LOC": (0, 1, 1), "MISC": (0, 1, 0), "ORG": (0, 0, 1), "PER": (1, 0, 1)}
    # Each false positive in one class; Al and Acme overlap no prediction: missing.
    assert result.errors == NerErrors(boundary=1, missing=2, spurious=1)


def test_empty_and_absent_predictions_are_all_false_negatives():
    for pred in ([], [rec("r1", TEXT), rec("r2", TEXT2)]):
        result = evaluate(GOLD, pred)
        assert micro(result) == (0, 0, 4) and micro(result, "re") == (0, 0, 2)
        assert result.ner.micro.f1 == 0.0 and result.errors.missing == 4


def test_relation_with_wrong_arguments():
    # Head "Bo" typed ORG: the relation is wrong in strict mode, right when only boundaries count.
    wrong_head_type = [rec("r1", TEXT, [(0, 2, "ORG"), (12, 20, "LOC")], [(0, 1, "Live_In")]), GOLD[1]]
    assert micro(evaluate(GOLD, wrong_head_type), "re") == (1, 1, 1)
    assert micro(evaluate(GOLD, wrong_head_type, re_mode="boundaries"), "re") == (2, 0, 0)
    # Tail "New" instead of "New York": wrong in both modes; reversed direction is wrong too.
    wrong_tail = [rec("r1", TEXT, [(0, 2, "PER"), (12, 15, "LOC")], [(0, 1, "Live_In")]), GOLD[1]]
    assert micro(evaluate(GOLD, wrong_tail, re_mode="boundaries"), "re") == (1, 1, 1)
    reversed_ = [rec("r1", TEXT, [(0, 2, "PER"), (12, 20, "LOC")], [(1, 0, "Live_In")]), GOLD[1]]
    result = evaluate(GOLD, reversed_)
    assert micro(result, "re") == (1, 1, 1) and result.re.per_type["Live_In"].f1 == 0.0


def test_symmetric_types_direction_free_only_when_asked():
    schema = load_config(resolve_config_path("scierc")).task_schema  # Compare is symmetric, Used-for is not
    text = "A beats B ."
    gold = [rec("s", text, [(0, 1, "Method"), (8, 9, "Method")], [(0, 1, "Compare"), (0, 1, "Used-for")])]
    pred = [rec("s", text, [(0, 1, "Method"), (8, 9, "Method")], [(1, 0, "Compare"), (1, 0, "Used-for")])]
    assert micro(evaluate(gold, pred, schema), "re") == (0, 2, 2)
    result = evaluate(gold, pred, schema, symmetric=True)
    assert micro(result, "re") == (1, 1, 1) and result.re.symmetric_types == ["Compare", "Conjunction"]
    assert set(result.ner.per_type) == set(schema.entity_types)  # every schema type is listed
    with pytest.raises(ValueError, match="needs the schema"):
        evaluate(gold, pred, symmetric=True)


def test_strings_mode_keeps_ungrounded_gold_triples():
    text = "Paris , France ; Paris again"
    meta = {"ungrounded_triples": [["France", "/capital", "Pariś"]]}
    gold = [rec("n", text, [(0, 5, "Entity"), (8, 14, "Entity")], [(1, 0, "/contains")], meta=meta)]
    # The prediction grounds "Paris" at its second occurrence: only the strings match.
    pred = [rec("n", text, [(17, 22, "Entity"), (8, 14, "Entity")], [(1, 0, "/contains")], meta=meta)]
    assert micro(evaluate(gold, pred), "re") == (0, 1, 1)
    assert micro(evaluate(gold, pred, re_mode="strings"), "re") == (1, 0, 1)  # the ungrounded triple stays a fn


def test_prediction_ids_not_in_gold_are_counted_and_duplicate_ids_rejected():
    result = evaluate(GOLD, [*GOLD, rec("stray", "x")])
    assert result.unmatched_predictions == 1 and micro(result) == (4, 0, 0)
    with pytest.raises(ValueError, match="predictions: 1 record ids occur more than once"):
        evaluate(GOLD, [GOLD[0], GOLD[0]])
    with pytest.raises(ValueError, match="re_mode"):
        evaluate(GOLD, GOLD, re_mode="loose")


def test_a_prediction_for_another_text_is_refused_and_missing_and_extra_ids_are_listed():
    other = rec("r2", "Al works for Acme Corp .", [(0, 2, "PER")])
    with pytest.raises(ValueError, match="record 'r2': the prediction's text differs from the gold's"):
        evaluate(GOLD, [GOLD[0], other])
    match = match_records(GOLD, [rec("x1", "x"), GOLD[1], rec("x2", "y")])
    assert (match.matched, match.missing, match.extra) == (1, ["r1"], ["x1", "x2"])
    assert match.summary(first=1).model_dump() == {"matched": 1, "missing": {"count": 1, "first": ["r1"]},
                                                   "extra": {"count": 2, "first": ["x1"]}}


SEM_TEXT = "the cause made an effect"  # e1 "cause" 4-9, e2 "effect" 18-24


def sem(rid, label):
    """A SemEval-style record whose relation encodes `label`."""
    relations = []
    if label != "Other":
        rtype, args = label.split("(")
        relations = [(0, 1, rtype)] if args.startswith("e1") else [(1, 0, rtype)]
    return rec(rid, SEM_TEXT, [(4, 9, "Nominal"), (18, 24, "Nominal")], relations)


def test_semeval_official_macro_f1_by_hand():
    cases = [  # (gold, predicted)
        ("Cause-Effect(e1,e2)", "Cause-Effect(e1,e2)"),  # correct
        ("Cause-Effect(e2,e1)", "Cause-Effect(e1,e2)"),  # wrong direction: a wrong Cause-Effect prediction
        ("Message-Topic(e1,e2)", "Other"),
        ("Other", "Message-Topic(e1,e2)"),
        ("Message-Topic(e2,e1)", "Message-Topic(e2,e1)"),
        ("Message-Topic(e1,e2)", "Message-Topic(e1,e2)"),
        ("Other", "Cause-Effect(e2,e1)"),
    ]
    gold = [sem(str(i), g) for i, (g, _) in enumerate(cases)]
    pred = [sem(str(i), p) for i, (_, p) in enumerate(cases)]
    assert [semeval_label(g, p) for g, p in zip(gold, pred)] == [p for _, p in cases]
    result = evaluate(gold, pred, semeval=True).semeval
    # Cause-Effect: tp 1, predicted 3, gold 2 -> P 1/3, R 1/2, F1 0.4.
    # Message-Topic: tp 2, predicted 3, gold 3 -> P = R = F1 = 2/3.
    ce, mt = result.per_relation["Cause-Effect"], result.per_relation["Message-Topic"]
    assert (ce.tp, ce.fp, ce.fn) == (1, 2, 1) and ce.f1 == pytest.approx(0.4)
    assert mt.f1 == pytest.approx(2 / 3)
    assert result.macro.f1 == pytest.approx((0.4 + 2 / 3) / 2)
    assert result.macro.precision == pytest.approx(0.5)
    # Micro: tp 3 of 6 predicted, 5 gold -> P 0.5, R 0.6, F1 6/11.
    assert result.micro.f1 == pytest.approx(6 / 11)
