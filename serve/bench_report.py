"""The bench's outputs: `bench.md` (one table, ratios to crossagentie, the paper's numbers beside) and a PNG of
F1 against cost per sentence."""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from serve.bench_metrics import (
    NER_F1_GAIN_TARGET,
    STUDENT_COST_FRACTION,
    STUDENT_INVALID_FRACTION,
    STUDENT_RE_MARGIN,
    TOKEN_RATIO_TARGET,
    MethodMetrics,
    StudentTarget,
    TeacherTarget,
)

# CrossAgentIE paper, Table (CoNLL04 NER F1, GPT-3.5 backbone): a different, far larger model; for reference.
PAPER_CONLL04_NER_F1 = {"direct": 58.13, "self-consistency": 60.48, "type-agents": 55.73,
                        "crossagentie": 66.45, "student": 68.38}

COLUMNS = [
    ("method", "{}"), ("NER P", "{:.1f}"), ("NER R", "{:.1f}"), ("NER F1", "{:.2f}"), ("RE P", "{:.1f}"),
    ("RE R", "{:.1f}"), ("RE F1", "{:.2f}"), ("calls/sent", "{:.2f}"), ("prompt tok/sent", "{:.0f}"),
    ("of which prefix-cached", "{:.0f}"), ("compl. tok/sent", "{:.0f}"), ("p50 s", "{:.2f}"), ("p95 s", "{:.2f}"),
    ("sent/s", "{:.3f}"), ("$/1k sent", "{:.4f}"), ("tokens × ref", "{:.2f}"), ("new tokens × ref", "{:.2f}"),
    ("NER F1 × ref", "{:.2f}"), ("paper NER F1", "{}"),
]


def _cells(m: MethodMetrics) -> list[Any]:
    return [m.method, m.ner_p, m.ner_r, m.ner_f1, m.re_p, m.re_r, m.re_f1, m.calls_per_sentence,
            m.prompt_tokens_per_sentence, m.prefix_cached_tokens_per_sentence, m.completion_tokens_per_sentence,
            m.latency_p50_s, m.latency_p95_s, m.throughput_sentences_per_s, m.usd_per_1k_sentences,
            m.ratios.get("tokens_per_sentence"), m.ratios.get("new_tokens_per_sentence"),
            m.ratios.get("ner_f1"), PAPER_CONLL04_NER_F1.get(m.method, "–")]


def _cell(fmt: str, value: Any) -> str:
    """A table cell; "–" where there is no number (no reference row for a ratio, or a zero one)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return fmt.format(value)


def markdown_table(rows: Sequence[MethodMetrics]) -> str:
    head = "| " + " | ".join(name for name, _ in COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    lines = [head, rule]
    for m in rows:
        lines.append("| " + " | ".join(_cell(fmt, v) for (_, fmt), v in zip(COLUMNS, _cells(m))) + " |")
    return "\n".join(lines)


def target_lines(target: TeacherTarget) -> list[str]:
    verdict = "met" if target.met else "not met"
    usd = (f"{target.usd_ratio:.2f}× the $ per sentence" if math.isfinite(target.usd_ratio)
           else "no $ ratio (the config's `bench.prices` prices neither row above $0)")
    return [f"## Teacher target: {verdict}", "",
            f"`{target.method}` against `{target.baseline}`: NER F1 {target.ner_f1_gain:+.2f} points "
            f"(target at least +{NER_F1_GAIN_TARGET:g}), {target.new_tokens_ratio:.2f}× the new tokens a sentence "
            f"(target at most {TOKEN_RATIO_TARGET:g}×); {target.tokens_ratio_in_full:.2f}× the tokens counted in "
            f"full, {usd}."]


def student_target_lines(target: StudentTarget) -> list[str]:
    verdict = "met" if target.met else "not met"
    return [f"## Student target: {verdict}", "",
            f"`student` against `{target.teacher}`: NER F1 {target.ner_f1_gain:+.2f} points (target at least +0), "
            f"RE F1 {target.re_f1_gain:+.2f} (target at least -{STUDENT_RE_MARGIN:g}), "
            f"{target.new_tokens_ratio:.3f}× the new tokens and {target.latency_p50_ratio:.3f}× the p50 latency a "
            f"sentence (targets at most {STUDENT_COST_FRACTION:.3f}×); {100 * target.invalid_fraction:.1f} % of "
            f"answers invalid (target under {100 * STUDENT_INVALID_FRACTION:g} %) and "
            f"{100 * target.truncated_fraction:.1f} % cut off at the token limit (target 0)."]


def write_markdown(path: Path, rows: Sequence[MethodMetrics], header: dict[str, Any],
                   target: TeacherTarget | None = None, student: StudentTarget | None = None) -> None:
    notes = [f"- {k}: {v}" for k, v in header.items()]
    text = ("# Bench\n\n" + "\n".join(notes) + "\n\n" + markdown_table(rows) + "\n\n"
            "Ratios (×) are to the `crossagentie` row (– without one). 'new tokens' are what the server computed: "
            "prompt tokens not reused from its prefix cache, plus completion tokens. 'paper NER F1' is the "
            "CrossAgentIE paper's CoNLL04 test number with GPT-3.5 (a different, far larger backbone), for "
            "reference only.\n")
    if target is not None:
        text += "\n" + "\n".join(target_lines(target)) + "\n"
    if student is not None:
        text += "\n" + "\n".join(student_target_lines(student)) + "\n"
    path.write_text(text, encoding="utf-8")


def write_plot(path: Path, rows: Sequence[MethodMetrics]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for m in rows:
        x = m.tokens_per_sentence
        ax.scatter([x], [m.ner_f1], s=40)
        ax.annotate(f"{m.method}\nRE {m.re_f1:.1f}", (x, m.ner_f1), textcoords="offset points", xytext=(5, 4),
                    fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("tokens per sentence (prompt + completion, log scale)")
    ax.set_ylabel("NER F1 (strict)")
    ax.set_title("F1 against cost per sentence")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def summary_lines(bench: dict[str, Any], out: Path) -> list[str]:
    """The few lines the bench ends with, from its `bench.json` content: one per method, the target's verdict
    and where the table is."""
    rows = [MethodMetrics.model_validate(r) for r in bench["rows"]]
    lines = [f"bench: {len(rows)} methods on {bench['sentences']} sentences of {bench['dataset']}"]
    lines += [f"  {r.method}: NER F1 {r.ner_f1:.1f}, RE F1 {r.re_f1:.1f}; per sentence "
              f"{r.calls_per_sentence:.1f} calls, {r.tokens_per_sentence:,.0f} tokens, "
              f"p50 {r.latency_p50_s:.2f} s" for r in rows]
    if bench.get("teacher_target") is not None:
        target = TeacherTarget.model_validate(bench["teacher_target"])
        lines.append(f"  teacher target ({target.method} against {target.baseline}): "
                     f"{'met' if target.met else 'not met'}")
    if bench.get("student_target") is not None:
        student = StudentTarget.model_validate(bench["student_target"])
        lines.append(f"  student target (against {student.teacher}): {'met' if student.met else 'not met'}")
    lines.append(f"  table: {out / 'bench.md'} (also bench.json, bench.png)")
    lines.append(f"  viewer: {out / 'report.html'} (each method's records)")
    return lines
