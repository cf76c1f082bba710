"""The student per-type sweep (the paper's Figure 2) from the benches of its students.

One student a sweep point (trained on k examples per type, or on all), each benched on the same sentences; the
teacher rows of those benches are the reference.

    python -m serve.bench_sweep --bench runs/bench-k1 runs/bench-k3 runs/bench-all --out runs/sweep
    python -m serve.bench_sweep --bench runs/bench-k7 --extend results/X/sweep.json --out runs/sweep   # add a point

Each `--bench` folder is a `python -m serve.bench` output with a `student` row; its bench.json's
`student_adapter` names the adapter, and the student's distill manifest is the `manifest.json` beside the data it
was trained on (the `data` that `student_config.json`, in the adapter's folder, records: `distill --out D` writes
D/dataset and D/manifest.json, whether D is `train_student.sh`'s OUT/data or a sweep's per_type<k>/). Writes
`sweep.md` (one row a student, sorted by examples per type, `all` last; the teacher rows below), `sweep.json`
(the same, typed: `Sweep`) and `sweep.png` (NER and RE F1 against examples per entity type, teachers dashed).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from distill.config import ALL, SweepPoint
from serve.bench_config import write_json
from serve.bench_metrics import MethodMetrics


class SweepError(ValueError):
    """A bench folder or manifest the sweep cannot read; the message names the file."""


class Manifest(BaseModel):
    """What the sweep reads of a distill `manifest.json`: the point (`per_type`; null outside a sweep, then the
    settings' `ner_per_type` is the point), the per-type counts it ran with, the training records."""
    class Settings(BaseModel):
        ner_per_type: int | None
        re_per_type: int | None

    class Selection(BaseModel):
        train: int

    class Template(BaseModel):
        sha256: str

    per_type: str | None = None
    settings: Settings
    selection: Selection
    template: Template | None = None


@dataclass(frozen=True)
class BenchRun:
    """One bench folder as read: its sentences, student row and adapter, teacher rows, and the student's manifest."""
    folder: str
    dataset: str
    adapter: str
    student: MethodMetrics
    teachers: list[MethodMetrics]
    manifest: Manifest


class Scored(BaseModel):
    """A row's scores and cost, as the sweep shows them."""
    method: str
    bench: str
    ner_f1: float
    re_f1: float
    latency_p50_s: float
    new_tokens_per_sentence: float

    @classmethod
    def fields_of(cls, row: MethodMetrics, bench: str) -> dict[str, Any]:
        return {"method": row.method, "bench": bench, "ner_f1": row.ner_f1, "re_f1": row.re_f1,
                "latency_p50_s": row.latency_p50_s, "new_tokens_per_sentence": row.new_tokens_per_sentence}


class StudentPoint(Scored):
    """One student: its sweep point (`per_type` "5" or "all"), the per-type counts and training records it was
    distilled with, its invalid answers (its bench row's `failed_calls`: answers that never validated) and its
    answers cut off at the token limit (`truncated_calls`; None in a row saved before they were counted), and the
    sha256 of the student template it was trained with (the answer format changes with it; None if unrecorded)."""
    per_type: str
    ner_per_type: int | None
    re_per_type: int | None
    train_records: int
    invalid_answers: int
    cut_off_answers: int | None
    adapter: str
    template_sha256: str | None = None

    @property
    def point(self) -> SweepPoint:
        return SweepPoint.parse(self.per_type)


class Sweep(BaseModel):
    """`sweep.json`: the sentences, the students in sweep order, and the teacher rows (each once)."""
    dataset: str
    students: list[StudentPoint]
    teachers: list[Scored]


def build_sweep(runs: Sequence[BenchRun], saved: Sweep | None = None) -> Sweep:
    """The sweep over benches of the same sentences, added to a `saved` sweep (whose row of a re-read bench folder
    is replaced); a teacher row met in several benches is listed once."""
    datasets = sorted({r.dataset for r in runs} | ({saved.dataset} if saved else set()))
    if len(datasets) != 1:
        raise SweepError(f"the benches are on different sentences ({'; '.join(datasets)}): bench every student "
                         "on the same --split, --offset and --limit")
    students = [StudentPoint(
        **Scored.fields_of(r.student, r.folder), adapter=r.adapter, invalid_answers=r.student.failed_calls,
        cut_off_answers=r.student.truncated_calls,
        per_type=r.manifest.per_type or str(r.manifest.settings.ner_per_type),
        ner_per_type=r.manifest.settings.ner_per_type, re_per_type=r.manifest.settings.re_per_type,
        train_records=r.manifest.selection.train,
        template_sha256=r.manifest.template.sha256 if r.manifest.template else None) for r in runs]
    if saved:
        students += [s for s in saved.students if s.bench not in {r.folder for r in runs}]
    teachers: dict[tuple, Scored] = {}
    for scored in [*(saved.teachers if saved else []),
                   *(Scored(**Scored.fields_of(row, r.folder)) for r in runs for row in r.teachers)]:
        teachers.setdefault(tuple(scored.model_dump(exclude={"bench"}).values()), scored)
    return Sweep(dataset=datasets[0], students=sorted(students, key=lambda s: (s.point.k is None, s.point.k or 0)),
                 teachers=list(teachers.values()))


def read_sweep(path: Path) -> Sweep:
    """A `sweep.json` this module wrote, to extend with more benches (a sweep spans sessions)."""
    try:
        return Sweep.model_validate(_json(path))
    except ValidationError as exc:
        raise SweepError(f"{path}: not a sweep.json: {exc}") from None


def _counts(s: StudentPoint) -> str:
    return ALL if s.per_type == ALL else f"{s.per_type} ({s.ner_per_type}/{s.re_per_type})"


def markdown(sweep: Sweep) -> str:
    lines = ["# Student per-type sweep", "", f"- dataset: {sweep.dataset}", "",
             "| per type (ner/re) | training records | NER F1 | RE F1 | invalid answers | cut off | p50 s "
             "| new tok/sent | template | bench |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {_counts(s)} | {s.train_records} | {s.ner_f1:.2f} | {s.re_f1:.2f} | {s.invalid_answers} | "
              f"{'–' if s.cut_off_answers is None else s.cut_off_answers} | {s.latency_p50_s:.2f} | "
              f"{s.new_tokens_per_sentence:.0f} | {(s.template_sha256 or '–')[:8]} | {s.bench} |"
              for s in sweep.students]
    lines += ["", "Teacher rows of the same benches, for reference:", ""]
    lines += [f"- {t.method} ({t.bench}): NER F1 {t.ner_f1:.2f}, RE F1 {t.re_f1:.2f}, p50 {t.latency_p50_s:.2f} s, "
              f"{t.new_tokens_per_sentence:.0f} new tokens a sentence" for t in sweep.teachers] or ["- none"]
    lines += ["", "'invalid answers': the student's answers that never validated (its bench row's `failed_calls`); "
              "'cut off': answers that ran to the token limit, their complete items kept (`truncated_calls`; – where "
              "the row predates that count); 'template': the first hex digits of the sha256 of the student template "
              "the student was trained with (its distill manifest's `template`): the answer format changes with it."]
    return "\n".join(lines) + "\n"


def write_plot(path: Path, sweep: Sweep) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numbers = [s.point.k for s in sweep.students if s.point.k is not None]
    right_end = max(numbers, default=0) + 2  # where `all` sits, labelled with its training records
    xs = [right_end if s.point.k is None else s.point.k for s in sweep.students]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for name, color, values in (("NER F1", "C0", [s.ner_f1 for s in sweep.students]),
                                ("RE F1", "C1", [s.re_f1 for s in sweep.students])):
        ax.plot(xs, values, marker="o", color=color, label=f"student {name}")
    for t in sweep.teachers:  # dashed, named at the right edge
        for value, color in ((t.ner_f1, "C0"), (t.re_f1, "C1")):
            ax.axhline(value, color=color, linestyle="--", alpha=0.6)
            ax.text(1.01, value, t.method, transform=ax.get_yaxis_transform(), color=color, fontsize=7,
                    va="center")
    ax.set_xticks(xs, [f"all\n({s.train_records} train)" if s.per_type == ALL else s.per_type for s in sweep.students])
    ax.set_xlabel("examples per entity type (all: every record that passes screening)")
    ax.set_ylabel("F1 (strict)")
    ax.set_title("Student F1 against examples per type")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, title="dashed: teacher rows", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _json(path: Path) -> Any:
    if not path.is_file():
        raise SweepError(f"{path}: not found")
    return json.loads(path.read_text(encoding="utf-8"))


def read_bench(folder: Path) -> BenchRun:
    """A bench folder and the manifest of its student (see the module doc)."""
    path = folder / "bench.json"
    bench = _json(path)
    rows = [MethodMetrics.model_validate(r) for r in bench["rows"]]
    student = next((r for r in rows if r.method == "student"), None)
    adapter = bench.get("student_adapter")
    if student is None or adapter is None:
        raise SweepError(f"{path}: no {'student row' if student is None else 'student_adapter'}; bench the "
                         "student with --methods ...,student (a re-run reuses the rows it has)")
    trained = Path(adapter).parent / "student_config.json"
    data = _json(trained).get("config", {}).get("data")
    if not data:
        raise SweepError(f"{trained}: no config.data: not the run record train_student.py writes")
    manifest_path = Path(data).parent / "manifest.json"
    if not manifest_path.is_file():
        raise SweepError(f"{manifest_path}: not found: the distill manifest beside {data}, the data {trained} "
                         "says the student was trained on")
    try:
        manifest = Manifest.model_validate(_json(manifest_path))
    except ValidationError as exc:
        raise SweepError(f"{manifest_path}: not a distill manifest: {exc}") from None
    return BenchRun(str(folder), bench["dataset"], adapter, student, [r for r in rows if r.method != "student"],
                    manifest)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m serve.bench_sweep", description=__doc__.split("\n")[0],
                                allow_abbrev=False)
    p.add_argument("--bench", type=Path, nargs="+", required=True, help="bench output folders, one a student")
    p.add_argument("--extend", type=Path, default=None,
                   help="a saved sweep.json to add these benches to (its other students and teachers are kept; "
                        "a bench folder it already holds is re-read); default: none")
    p.add_argument("--out", type=Path, required=True, help="output folder (sweep.md, sweep.json, sweep.png)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        saved = read_sweep(args.extend) if args.extend else None
        sweep = build_sweep([read_bench(folder) for folder in args.bench], saved)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sweep.md").write_text(markdown(sweep), encoding="utf-8")
    write_json(args.out / "sweep.json", sweep.model_dump(mode="json"))
    write_plot(args.out / "sweep.png", sweep)
    print(f"sweep: {len(sweep.students)} students on {sweep.dataset}; table: {args.out / 'sweep.md'} "
          "(also sweep.json, sweep.png)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
