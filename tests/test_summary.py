"""`ie.summary`: the lines a run ends with, from its records and, with gold, its scores."""
from pathlib import Path

from ie.records import LabelledRecord
from ie.scoring import Scores
from ie.summary import RunSummary


def test_summary_lines_from_records_and_metrics():
    labelled = [LabelledRecord(id="a", text="x", stats={"calls": 3, "prompt_tokens": 1000, "completion_tokens": 200}),
                LabelledRecord(id="b", text="y", stats={"calls": 1, "prompt_tokens": 300, "completion_tokens": 100})]
    def prf(f1):
        return {"precision": f1, "recall": f1, "f1": f1, "tp": 0, "fp": 0, "fn": 0}

    metrics = Scores.model_validate({"ner": {"micro": prf(0.5)}, "errors": {}, "records": 2, "unmatched_predictions": 0,
                                     "re": {"micro": prf(0.25), "per_type": {"R": prf(0.25)}, "mode": "strings",
                                            "symmetric_types": []}})
    s = RunSummary.of("teacher direct", 3, labelled, 1, metrics, {"report": Path("runs/x/report.md")})
    assert s.lines() == ["teacher direct: 2 of 3 records labelled, 1 failed",
                         "  NER F1 50.0, RE F1 25.0 (strings) against the gold",
                         "  per record: 2.0 calls, 800 tokens",
                         "  report: runs/x/report.md"]
    without_gold = RunSummary.of("student", 2, labelled, 0)
    assert without_gold.lines() == ["student: 2 of 2 records labelled, 0 failed", "  per record: 2.0 calls, 800 tokens"]
