"""`serve.bench_report`: the teacher target's lines and the bench's closing lines."""


from pathlib import Path

from serve.bench_metrics import (
    MethodMetrics,
    TeacherTarget,
    student_target,
    teacher_target,
)
from serve.bench_report import student_target_lines, summary_lines, target_lines
from tests.bench_rows import f1_row


def test_the_target_line_says_when_no_row_has_a_price():
    direct, ours = f1_row("direct", 0.45, 300, 200, 50), f1_row("crossagentie", 0.51, 1700, 400, 310)
    assert "× the $ per sentence" in target_lines(teacher_target([direct, ours]))[-1]
    free = [r.model_copy(update={"usd_per_1k_sentences": 0.0}) for r in (direct, ours)]
    line = target_lines(teacher_target(free))[-1]
    assert "nan" not in line and "no $ ratio" in line


def test_the_student_target_lines_name_every_condition():
    teacher, student = f1_row("crossagentie", 0.57, 1900, 600, 1100), f1_row("student", 0.55, 700, 100, 650)
    line = student_target_lines(student_target([teacher, student.model_copy(update={"truncated_calls": 1})]))
    assert line[0] == "## Student target: not met"
    for part in ("NER F1 -2.00 points", "RE F1 +0.00", "0.107× the new tokens", "100.0 % cut off", "0.0 % of answers"):
        assert part in line[-1], part


def test_bench_closing_lines():
    row = MethodMetrics(method="direct", model="m", sentences=50, ner_p=40.0, ner_r=42.5, ner_f1=41.234, re_p=5.0,
                        re_r=5.0, re_f1=5.0, calls_per_sentence=1.0, prompt_tokens_per_sentence=512.4,
                        completion_tokens_per_sentence=100.0, prefix_cached_tokens_per_sentence=0.0,
                        latency_p50_s=0.456, latency_p95_s=0.9, throughput_sentences_per_s=2.0,
                        usd_per_1k_sentences=0.1, cached_calls_fraction=0.0, failed_calls=0).as_dict()
    target = TeacherTarget(method="crossagentie", baseline="direct", ner_f1_gain=0.0, new_tokens_ratio=1.0,
                           tokens_ratio_in_full=1.0, usd_ratio=1.0, met=False).as_dict()
    bench = {"dataset": "conll04 dev", "sentences": 50, "rows": [row, {**row, "method": "crossagentie"}],
             "teacher_target": target}
    assert summary_lines(bench, Path("runs/bench")) == [
        "bench: 2 methods on 50 sentences of conll04 dev",
        "  direct: NER F1 41.2, RE F1 5.0; per sentence 1.0 calls, 612 tokens, p50 0.46 s",
        "  crossagentie: NER F1 41.2, RE F1 5.0; per sentence 1.0 calls, 612 tokens, p50 0.46 s",
        "  teacher target (crossagentie against direct): not met",
        "  table: runs/bench/bench.md (also bench.json, bench.png)",
        "  viewer: runs/bench/report.html (each method's records)"]


def test_a_ratio_with_no_reference_row_is_a_dash_not_nan():
    from serve.bench_metrics import add_ratios
    from serve.bench_report import markdown_table

    alone = [f1_row("student", 0.55, 700, 100, 650)]
    add_ratios(alone)
    [row] = markdown_table(alone).splitlines()[2:]
    assert "nan" not in row and row.endswith("| – | – | – | 68.38 |"), row
