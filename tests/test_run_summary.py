"""What a person sees at the end of a run (`ie.summary`), and that library loggers stay quiet unless --verbose
(`ie.logs`): the teacher and student CLIs against a scripted server, the bench's closing lines."""
import json
import logging
from pathlib import Path

import pytest
from fault_server import FaultServer, Reply, closed_port

from ie.logs import setup_logging
from ie.schema import Record, write_records
from ie.scoring import Scores
from ie.summary import RunSummary
from serve import client as student_client
from serve.bench_metrics import MethodMetrics, TeacherTarget
from serve.bench_report import summary_lines
from teacher.__main__ import main as teacher_main
from tests.test_teacher_runner import GOLD as RUNNER_GOLD

GOLD = RUNNER_GOLD[:2]  # two records: one with a relation
NAMES = ("Dole", "Reagan", "Rome", "NASA", "Houston")


def every_name_a_location(body: dict) -> Reply:
    """The direct method's answer: each name of the prompt's text, all typed Loc (2 of the 5 are right)."""
    text = body["messages"][-1]["content"].split("<text>")[-1]
    return Reply(json.dumps({"entities": [{"text": n, "type": "Loc", "confidence": 0.8} for n in NAMES
                                          if f"{n} " in text]}))


@pytest.fixture(autouse=True)
def quiet_again():
    yield
    setup_logging(False)


def teacher_args(tmp_path: Path, url: str, *extra: str) -> list[str]:
    data = tmp_path / "gold.jsonl"
    write_records(data, GOLD)
    return ["run", "--config", "conll04", "--input", str(data), "--method", "direct", "--endpoint", url,
            "--model-name", "m", "--out", str(tmp_path / "out"), "--no-progress", "--retries", "0", *extra]


def test_summary_lines_from_records_and_metrics():
    labelled = [Record(id="a", text="x", stats={"calls": 3, "prompt_tokens": 1000, "completion_tokens": 200}),
                Record(id="b", text="y", stats={"calls": 1, "prompt_tokens": 300, "completion_tokens": 100})]
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


def test_teacher_run_ends_with_the_summary_and_httpx_stays_quiet(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO)
    with FaultServer(every_name_a_location) as server:
        assert teacher_main(teacher_args(tmp_path, server.url)) == 0
    assert len(server.requests) == 2
    out = tmp_path / "out"
    # Rome and Houston typed right of 5 gold, 5 predicted: F1 40; the gold relation is missed; 15 tokens a reply
    assert capsys.readouterr().out.splitlines() == [
        "teacher direct: 2 of 2 records labelled, 0 failed",
        "  NER F1 40.0, RE F1 0.0 (strict) against the gold",
        "  per record: 1.0 calls, 15 tokens",
        f"  report: {out / 'report.md'}",
        f"  predictions: {out / 'predictions.jsonl'}"]
    assert (out / "report.md").exists()
    assert all(logging.getLogger(name).getEffectiveLevel() == logging.WARNING for name in ("httpx", "httpx2"))
    assert not [r for r in caplog.records if "HTTP Request" in r.getMessage()]
    assert any(r.name == "teacher" for r in caplog.records)  # the project's own INFO lines still show


def test_verbose_shows_the_library_request_lines(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    with FaultServer(every_name_a_location) as server:
        assert teacher_main(teacher_args(tmp_path, server.url, "--verbose")) == 0
    requests = [r for r in caplog.records if r.name.startswith("httpx") and "HTTP Request: POST" in r.getMessage()]
    assert len(requests) == 2


def test_a_failed_teacher_run_summarises_then_names_the_failures(tmp_path, capsys):
    assert teacher_main(teacher_args(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["teacher direct: 0 of 2 records labelled, 2 failed",
                                         "  per record: 0.0 calls, 0 tokens",
                                         f"  predictions: {tmp_path / 'out' / 'predictions.jsonl'}"]
    assert [line for line in captured.err.splitlines() if line.startswith("error:")][0].startswith(
        "error: 2 of 2 records failed (2 connection error")


def test_student_client_summary_scores_against_the_input_s_labels(tmp_path, capsys):
    data, out = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    write_records(data, GOLD)
    answer = json.dumps({"entities": [{"text": "NASA", "type": "Org"}, {"text": "Houston", "type": "Loc"}],
                         "relations": [{"head": "NASA", "head_type": "Org", "type": "OrgBased_In",
                                        "tail": "Houston", "tail_type": "Loc"}]})
    with FaultServer(lambda body: Reply(answer)) as server:
        assert student_client.main(["--endpoint", server.url, "--model", "m", "--input", str(data), "--config",
                                    "conll04", "--out", str(out), "--retries", "0"]) == 0
    # record a: its text has neither name, so nothing is grounded; record b: both entities and the relation right
    # NER P 2/2, R 2/5 -> F1 57.1; RE P 1/1, R 1/1 -> F1 100
    assert capsys.readouterr().out.splitlines() == [
        "student: 2 of 2 records labelled, 0 failed",
        "  NER F1 57.1, RE F1 100.0 (strict) against the gold",
        "  per record: 1.0 calls, 15 tokens",
        f"  records: {out}",
        f"  run: {out.with_suffix('.run.json')}"]


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
        "  table: runs/bench/bench.md (also bench.json, bench.png)"]


@pytest.mark.slow
def test_teacher_cli_on_the_embedded_server_ends_with_the_summary(tmp_path, capsys, caplog):
    """The real path: the teacher starts llama.cpp (smollm2-135m) itself, labels two gold sentences, and what
    it prints is the summary, with no HTTP request lines among the logs."""
    caplog.set_level(logging.INFO)
    data, out = tmp_path / "two.jsonl", tmp_path / "out"
    write_records(data, GOLD)
    assert teacher_main(["run", "--config", "conll04", "--input", str(data), "--method", "direct", "--model",
                         "smollm2-135m", "--out", str(out), "--no-progress", "--max-tokens", "32",
                         "--parse-retries", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "teacher direct: 2 of 2 records labelled, 0 failed"
    assert lines[1].startswith("  NER F1 ") and lines[1].endswith(" (strict) against the gold")
    assert lines[2].startswith("  per record: 1.0 calls, ")  # direct without re-asks: one call a record
    assert lines[3:] == [f"  report: {out / 'report.md'}", f"  predictions: {out / 'predictions.jsonl'}"]
    assert "{" not in (out / "report.md").read_text()
    assert not [r for r in caplog.records if "HTTP Request" in r.getMessage()]
