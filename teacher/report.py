"""`metrics.json` and `report.md` of a run with gold: P/R/F1 (×100; relations matched as the dataset config's
`score:` section says), per type, the NER error taxonomy (Table 8), how conflicts were settled, Δ before/after
alignment, and cost per record."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from ie.config import DatasetConfig, score_options
from ie.records import LabelledRecord, Transcript
from ie.schema import Record
from ie.scoring import PRF, Scores, TaskScores, evaluate
from teacher.config import TeacherConfig

COST_KEYS = ("calls", "cached_calls", "failed_calls", "prompt_tokens", "completion_tokens", "ungrounded_items",
             "wall_s")


def run_summary(predictions: Sequence[LabelledRecord]) -> dict[str, Any]:
    """Totals and per-record means of the teacher's own stats (pure)."""
    stats = [r.stats for r in predictions]
    debates = [r.debate or Transcript(method="") for r in predictions]
    n = max(len(predictions), 1)
    totals = {k: sum(getattr(s, k) for s in stats) for k in COST_KEYS}
    conflicts = [c for d in debates for c in d.conflicts]
    rounds = [a for d in debates for a in d.alignment]
    return {
        "records": len(predictions),
        "totals": {k: round(v, 3) for k, v in totals.items()},
        "per_record": {k: round(v / n, 3) for k, v in totals.items()},
        "tokens_per_record": round((totals["prompt_tokens"] + totals["completion_tokens"]) / n, 1),
        "conflicts": {"found": len(conflicts), "by_kind": dict(Counter(c.kind for c in conflicts)),
                      "settled_by": dict(Counter(str(c.settled_by) for c in conflicts))},
        "alignment": {"re_only_before": sum(len(a.before.re_only) for a in rounds),
                      "re_only_after": sum(len(a.after.re_only) for a in rounds),
                      "actions": dict(Counter(x.action for a in rounds for x in a.actions))},
        "extents": {"checked": sum(len(d.extents) for d in debates),
                    "trimmed": sum(bool(e.trimmed_to) for d in debates for e in d.extents)},
        "uncontested_checks": dict(Counter(c.outcome for d in debates for c in d.checks)),
        "routing": {"records": sum(d.routing is not None for d in debates),
                    "agents_skipped": sum(s.agents_skipped_by_routing for s in stats),
                    "fallbacks": sum(bool(d.routing and d.routing.fallback) for d in debates)},
        "notes": dict(Counter(note for d in debates for note in d.notes if "skipped" not in note)),
        "mean_record_confidence": round(mean(r.confidence or 0.0 for r in predictions), 4) if predictions else 0.0,
    }


class TeacherMetrics(Scores):
    """`metrics.json`: the scores against gold (`ie.scoring.evaluate`) and the teacher's own (`run_summary`,
    with the gold types routing kept)."""
    teacher: dict[str, Any]


def _prf(counts: PRF) -> str:
    return (f"{100 * counts.precision:.1f} | {100 * counts.recall:.1f} | {100 * counts.f1:.1f} | "
            f"{counts.tp} | {counts.fp} | {counts.fn}")


def _score_table(title: str, task: TaskScores) -> list[str]:
    lines = [f"## {title}", "", "| type | P | R | F1 | tp | fp | fn |", "|---|---|---|---|---|---|---|",
             f"| **micro** | {_prf(task.micro)} |"]
    lines += [f"| {t} | {_prf(c)} |" for t, c in task.per_type.items()]
    return lines + [""]


def _count_table(head: str, counts: dict[str, int]) -> list[str]:
    """A two-column table of `counts`, largest first; nothing when empty."""
    if not counts:
        return []
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [f"| {head} | conflicts |", "|---|---|", *(f"| {k.replace('_', ' ')} | {n} |" for k, n in rows), ""]


def _counts_sentence(counts: dict[str, int]) -> str:
    """{'added': 2, 'dropped': 1} -> '2 added, 1 dropped'; 'none' when empty."""
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in rows) or "none"


def _data_line(cfg: TeacherConfig, records: int, labelled: int, served_model: str | None = None) -> str:
    """What was labelled, and by which model; `served_model`: the name the endpoint answered as, named when it is
    not the one asked for (a server may serve another model than its caller thinks)."""
    from ie.llm.local import load_catalogue

    model = cfg.model_name if cfg.endpoint else (cfg.model or load_catalogue().default)
    if served_model and served_model != model:
        model = f"{served_model} (asked for {model}; the endpoint answered as {served_model})"
    return f"Data: {cfg.split or cfg.input} of {cfg.config}, {records} records ({labelled} labelled). Model: {model}."


def render_report(metrics: TeacherMetrics, cfg: TeacherConfig, served_model: str | None = None) -> str:
    """The report's markdown."""
    t = metrics.teacher
    lines = [f"# Teacher run: {cfg.method}", "", _data_line(cfg, metrics.records, t["records"], served_model), ""]
    lines += _score_table("NER (strict)", metrics.ner)
    if metrics.re.per_type:
        lines += _score_table(f"RE ({metrics.re.mode})", metrics.re)
    errors = metrics.errors.model_dump()
    lines += ["## NER errors (Table 8)", "", "| " + " | ".join(errors) + " |",
              "|" + "---|" * len(errors), "| " + " | ".join(map(str, errors.values())) + " |", ""]
    c, a = t["conflicts"], t["alignment"]
    lines += ["## Debate", "", f"Conflicts found: {c['found']}.", ""]
    lines += _count_table("conflict kind", c["by_kind"]) + _count_table("settled by", c["settled_by"])
    lines += [f"Name extent checks: {t['extents']['checked']}, {t['extents']['trimmed']} mentions trimmed.", ""]
    if t["uncontested_checks"]:
        lines += [f"Uncontested mentions checked: {_counts_sentence(t['uncontested_checks'])}.", ""]
    lines += [(f"Alignment: Δ (B \\ A) {a['re_only_before']} before, {a['re_only_after']} after; actions: "
               f"{_counts_sentence(a['actions'])}."), ""]
    r = t["routing"]
    if r["records"]:
        kept = " and ".join(f"{k['kept']} of {k['gold']} gold {name.replace('_', ' ')}"
                            for name, k in r.get("gold_types_kept", {}).items())
        kept = f"; kept {kept} of their sentences." if kept else "."
        lines += ["## Routing", "", f"{r['records']} records routed, {r['agents_skipped']} type agents not called, "
                  f"{r['fallbacks']} fallbacks to every agent{kept}", ""]
        for kind, ranked in (r.get("gold_types_ranked") or {}).items():
            if ranked.get("gold"):
                top = ", ".join(f"top {k}: {n}" for k, n in ranked["top"].items())
                chance = ", ".join(f"{n}" for n in ranked["chance"].values())
                lines += [(f"Router ranking (by score), {ranked['records']} records: of {ranked['gold']} gold "
                           f"{kind.replace('_', ' ')}, {top} (k types at random: {chance})."), ""]
    per = t["per_record"]
    lines += ["## Cost per record", "", "| calls | cached | failed | prompt tokens | completion tokens | wall s |",
              "|---|---|---|---|---|---|",
              (f"| {per['calls']} | {per['cached_calls']} | {per['failed_calls']} | {per['prompt_tokens']} | "
              f"{per['completion_tokens']} | {per['wall_s']} |"), ""]
    lines += [f"- {note} ({n} records)" for note, n in t["notes"].items()]
    return "\n".join(lines) + "\n"


def write_report(out: Path, gold: Sequence[Record], predictions: Sequence[LabelledRecord], dataset: DatasetConfig,
                 cfg: TeacherConfig, served_model: str | None = None) -> TeacherMetrics:
    """Scored as the dataset config's `score:` section says (`--re-mode` overrides its relation matching);
    `served_model`: see `render_report`."""
    from teacher.routing import gold_types_kept, gold_types_ranked

    options = score_options(dataset, re_mode=cfg.re_mode)
    scores = evaluate(list(gold), list(predictions), schema=dataset.task_schema, **options.model_dump())
    teacher = run_summary(predictions)
    teacher["routing"]["gold_types_kept"] = gold_types_kept(gold, predictions)
    teacher["routing"]["gold_types_ranked"] = gold_types_ranked(gold, predictions, dataset.task_schema)
    metrics = TeacherMetrics(**dict(scores), teacher=teacher)
    (out / "metrics.json").write_text(json.dumps(metrics.as_dict(), indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(render_report(metrics, cfg, served_model), encoding="utf-8")
    return metrics


def write_viewer(out: Path, records: Sequence[Record], predictions: Sequence[LabelledRecord], dataset: DatasetConfig,
                 cfg: TeacherConfig) -> Path:
    """`report.html` (`ie.viewer`): the labelled records, against `records`' gold when they carry any."""
    from ie.view import run_view
    from ie.viewer import PAGE, write_page

    gold = records if any(r.entities or r.relations for r in records) else None
    view = run_view(f"Teacher run: {cfg.method}", [_data_line(cfg, len(records), len(predictions))],
                    {cfg.method: predictions}, gold, dataset.task_schema, score_options(dataset, re_mode=cfg.re_mode))
    return write_page(out / PAGE, view)
