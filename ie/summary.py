"""The few lines a run ends with: how many records were labelled and failed, F1 against gold when there is
gold, calls and tokens a record, and where the outputs are. Shared by the teacher and the student client."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ie.records import LabelledRecord
from ie.scoring import Scores


@dataclass(frozen=True)
class RunSummary:
    what: str  # e.g. "teacher crossagentie"
    total: int
    labelled: int
    failed: int
    calls_per_record: float
    tokens_per_record: float  # prompt + completion
    ner_f1: float | None = None  # x100; None without gold
    re_f1: float | None = None  # x100; None without gold relations
    re_mode: str = "strict"
    outputs: Mapping[str, Path] = field(default_factory=dict)  # what -> where, e.g. "report" -> .../report.md

    @classmethod
    def of(cls, what: str, total: int, labelled: Sequence[LabelledRecord], failed: int,
           metrics: Scores | None = None, outputs: Mapping[str, Path] | None = None) -> RunSummary:
        """From the finished records' `stats` and, when gold exists, `ie.scoring.evaluate`'s result."""
        stats = [r.stats for r in labelled]
        n = max(len(labelled), 1)
        calls = sum(s.calls for s in stats)
        tokens = sum(s.prompt_tokens + s.completion_tokens for s in stats)
        ner = re_f1 = None
        re_mode = "strict"
        if metrics is not None:
            ner = 100 * metrics.ner.micro.f1
            if metrics.re.per_type:
                re_f1, re_mode = 100 * metrics.re.micro.f1, metrics.re.mode
        return cls(what, total, len(labelled), failed, calls / n, tokens / n, ner, re_f1, re_mode, dict(outputs or {}))

    def lines(self) -> list[str]:
        lines = [f"{self.what}: {self.labelled} of {self.total} records labelled, {self.failed} failed"]
        if self.ner_f1 is not None:
            scores = f"NER F1 {self.ner_f1:.1f}"
            if self.re_f1 is not None:
                scores += f", RE F1 {self.re_f1:.1f} ({self.re_mode})"
            lines.append(f"  {scores} against the gold")
        lines.append(f"  per record: {self.calls_per_record:.1f} calls, {self.tokens_per_record:,.0f} tokens")
        lines += [f"  {what}: {where}" for what, where in self.outputs.items()]
        return lines

    def text(self) -> str:
        return "\n".join(self.lines())
