"""`teacher.report`: the report a person reads, tables and sentences rather than Python dicts, scored as the
dataset config says."""
import json

from ie.records import (
    AlignmentAction,
    AlignmentRound,
    ConflictLog,
    DeltaLog,
    ExtentLog,
    LabelledRecord,
    Transcript,
)
from ie.schema import Record
from ie.scoring import evaluate
from teacher.config import TeacherConfig
from teacher.report import TeacherMetrics, render_report, run_summary
from tests.schemas import nyt_strings_pair

GOLD = Record(id="a", text="Dole met Reagan .", entities=[
    {"start": 0, "end": 4, "type": "Peop", "text": "Dole"}, {"start": 9, "end": 15, "type": "Peop", "text": "Reagan"}])


def conflict(kind: str, settled_by: str) -> ConflictLog:
    return ConflictLog(id="c", kind=kind, options=[], agents=[], stances=[], settled_by=settled_by)


def predicted() -> LabelledRecord:
    debate = Transcript(
        method="crossagentie",
        conflicts=[conflict("label", "summarizer")] * 2 + [conflict("boundary", "consensus_round_1")] * 3
        + [conflict("relation", "summarizer")],
        alignment=[AlignmentRound(round=1, before=DeltaLog(re_only=["Dole/Peop", "met/Peop"]), after=DeltaLog(),
                                  actions=[AlignmentAction(action=a) for a in ("added", "added", "dropped")])],
        extents=[ExtentLog(mention="Dole met", type="Peop", trimmed_to="Dole"), ExtentLog(mention="x", type="Peop")],
    )
    stats = {"calls": 4, "cached_calls": 0, "failed_calls": 0, "prompt_tokens": 400, "completion_tokens": 40,
             "ungrounded_items": 0, "wall_s": 1.5}
    return LabelledRecord(**GOLD.model_dump(), debate=debate, stats=stats, confidence=0.9)


def test_debate_section_is_tables_and_sentences_not_dicts():
    metrics = TeacherMetrics(**dict(evaluate([GOLD], [predicted()])), teacher=run_summary([predicted()]))
    report = render_report(metrics, TeacherConfig(split="dev", method="crossagentie", progress=False))
    debate = report.split("## Debate\n")[1].split("## Cost per record")[0]
    assert debate.strip().splitlines() == [
        "Conflicts found: 6.",
        "",
        "| conflict kind | conflicts |", "|---|---|", "| boundary | 3 |", "| label | 2 |", "| relation | 1 |",
        "",
        "| settled by | conflicts |", "|---|---|", "| consensus round 1 | 3 |", "| summarizer | 3 |",
        "",
        "Name extent checks: 2, 1 mentions trimmed.",
        "",
        "Alignment: Δ (B \\ A) 2 before, 0 after; actions: 2 added, 1 dropped.",
    ]
    assert "{" not in report and "| **micro** | 100.0 | 100.0 | 100.0 | 2 | 0 | 0 |" in report


def test_a_debate_without_conflicts_says_so_without_empty_tables():
    record = LabelledRecord(**GOLD.model_dump(), debate=Transcript(method="direct"))
    metrics = TeacherMetrics(**dict(evaluate([GOLD], [record])), teacher=run_summary([record]))
    report = render_report(metrics, TeacherConfig(split="dev", method="direct", progress=False))
    debate = report.split("## Debate\n")[1].split("## Cost per record")[0]
    assert "Conflicts found: 0." in debate and "| conflict kind |" not in debate and "actions: none." in debate


def test_report_scores_as_the_config_s_score_section_says(tmp_path):
    from ie.config import load_config, resolve_config_path
    from teacher.report import write_report

    nyt = load_config(resolve_config_path("nyt"))
    gold, pred = nyt_strings_pair()  # the same triple on the other "Iceland": right as strings, wrong if strict
    pred = LabelledRecord(**dict(pred))
    metrics = write_report(tmp_path, [gold], [pred], nyt, TeacherConfig(config="nyt"))
    assert metrics.re.mode == "strings" and metrics.re.micro.tp == 1
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics.as_dict()
    assert "RE (strings)" in (tmp_path / "report.md").read_text()
    strict = write_report(tmp_path, [gold], [pred], nyt, TeacherConfig(config="nyt", re_mode="strict"))
    assert strict.re.micro.tp == 0
