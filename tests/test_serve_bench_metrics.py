"""`serve.bench_metrics`, pure: per-method rows, ratios to crossagentie, the teacher target, and the saved rows'
JSON form."""
import json
import math

import pytest

from ie.config import REPO_ROOT
from serve.bench_metrics import (
    MethodMetrics,
    Price,
    StudentTarget,
    TeacherTarget,
    add_ratios,
    calculate_metrics,
    percentile,
    student_target,
    teacher_target,
)
from tests.bench_rows import bench_scores, f1_row, pred_with_stats


def test_percentile_interpolates():
    assert percentile([], 50) == 0.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)


def test_calculate_metrics_and_ratios():
    scores = bench_scores(ner=(0.5, 0.25, 1 / 3))
    preds = [pred_with_stats(2, 100, 20, 1.0, cached=1), pred_with_stats(4, 300, 60, 3.0)]
    m = calculate_metrics("direct", "m", scores, preds, wall_s=4.0, price=Price(input=1.0, output=2.0))
    assert m.calls_per_sentence == 3 and m.prompt_tokens_per_sentence == 200 and m.tokens_per_sentence == 240
    assert m.ner_f1 == pytest.approx(100 / 3) and m.throughput_sentences_per_s == 0.5
    assert m.usd_per_1k_sentences == pytest.approx(1000 * (200 * 1.0 + 40 * 2.0) / 1e6)
    assert m.cached_calls_fraction == pytest.approx(1 / 6) and m.latency_p50_s == 2.0
    ref = calculate_metrics("crossagentie", "m", scores, [pred_with_stats(12, 1000, 200, 9.0)], 9.0, Price())
    add_ratios([m, ref])
    assert m.ratios["calls_per_sentence"] == pytest.approx(0.25) and ref.ratios["ner_f1"] == 1.0
    assert math.isnan(m.ratios["usd_per_1k_sentences"])  # the reference costs $0


def test_prefix_cached_tokens_are_new_tokens_saved_and_priced_at_the_cached_rate():
    scores = bench_scores()
    price = Price(input=1.0, output=2.0, cached_input=0.25)
    m = calculate_metrics("crossagentie", "m", scores, [pred_with_stats(5, 1000, 100, 1.0, prefix=600)], 1.0, price)
    assert m.tokens_per_sentence == 1100 and m.new_tokens_per_sentence == 500
    assert m.usd_per_1k_sentences == pytest.approx(1000 * (400 * 1.0 + 600 * 0.25 + 100 * 2.0) / 1e6)
    direct = calculate_metrics("direct", "m", scores, [pred_with_stats(1, 300, 50, 1.0, prefix=100)], 1.0, price)
    add_ratios([direct, m])
    assert direct.ratios["new_tokens_per_sentence"] == pytest.approx(250 / 500)
    assert direct.ratios["tokens_per_sentence"] == pytest.approx(350 / 1100)


def test_teacher_target_counts_new_tokens_and_reports_the_count_in_full():
    direct = f1_row("direct", 0.45, 300, 200, 50)  # 500 tokens, 450 new
    # +6 points at 2100 tokens (4.2x in full) of which 1790 new (3.98x): met
    met = teacher_target([direct, f1_row("crossagentie", 0.51, 1700, 400, 310)])
    assert met.met and met.ner_f1_gain == pytest.approx(6.0)
    assert met.new_tokens_ratio == pytest.approx(1790 / 450) and met.tokens_ratio_in_full == pytest.approx(4.2)
    # one new token more than 4x, or a gain under 5 points: not met
    assert not teacher_target([direct, f1_row("crossagentie", 0.51, 1700, 400, 299)]).met
    assert not teacher_target([direct, f1_row("crossagentie", 0.499, 1000, 100, 500)]).met
    assert teacher_target([direct]) is None


def test_the_saved_bench_rows_and_target_read_back_to_the_same_json():
    files = sorted((REPO_ROOT / "results").glob("*/bench.json"))
    assert files
    for path in files:
        bench = json.loads(path.read_text())
        rows = [MethodMetrics.model_validate(r) for r in bench["rows"]]
        assert json.dumps([r.as_dict() for r in rows]) == json.dumps(bench["rows"]), path  # NaN, order included
        for key, model, verdict in (("teacher_target", TeacherTarget, teacher_target),
                                    ("student_target", StudentTarget, student_target)):
            if bench.get(key) is None:  # a bench without the rows the target compares
                assert verdict(rows) is None, path
                continue
            target = model.model_validate(bench[key])
            assert json.dumps(target.as_dict()) == json.dumps(bench[key]) == json.dumps(verdict(rows).as_dict()), path


def test_student_target_needs_teacher_f1_an_eighth_of_its_cost_and_answers_that_stop():
    teacher = f1_row("crossagentie", 0.57, 1900, 600, 1100)  # 1400 new tokens, p50 1 s
    student = f1_row("student", 0.58, 700, 100, 650).model_copy(update={"latency_p50_s": 0.1, "truncated_calls": 0})
    met = student_target([teacher, student])
    assert met.met and met.ner_f1_gain == pytest.approx(1.0) and met.new_tokens_ratio == pytest.approx(150 / 1400)
    assert student_target([teacher]) is None
    for update in ({"ner_f1": 56.9}, {"re_f1": -2.1}, {"latency_p50_s": 0.2}, {"prefix_cached_tokens_per_sentence": 500},
                   {"failed_calls": 1}, {"truncated_calls": 1}, {"truncated_calls": None}):
        assert not student_target([teacher, student.model_copy(update=update)]).met, update


def test_rows_count_cut_off_answers():
    preds = [pred_with_stats(1, 10, 384, 1.0), pred_with_stats(1, 10, 20, 1.0)]
    preds[0].stats.truncated_calls = 1
    row = calculate_metrics("student", "m", bench_scores(), preds, 2.0, Price())
    assert row.truncated_calls == 1 and row.as_dict()["truncated_calls"] == 1
