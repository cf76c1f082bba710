"""`python -m serve.bench` end to end on scripted endpoints: the three output files with their documented
fields, failed records kept out, its flags; then (slow) on the real embedded server."""
import importlib
import json

import pytest

from ie.config import load_config, resolve_config_path
from ie.datasets import load_split
from ie.schema import read_records
from serve import bench
from serve.bench_metrics import (
    NER_F1_GAIN_TARGET,
    TOKEN_RATIO_TARGET,
)
from serve.bench_run import MeasuredRow
from tests.bench_rows import minimal_answer

ROW_FIELDS = {"method", "model", "sentences", "ner_p", "ner_r", "ner_f1", "re_p", "re_r", "re_f1",
              "calls_per_sentence", "prompt_tokens_per_sentence", "completion_tokens_per_sentence",
              "latency_p50_s", "latency_p95_s", "throughput_sentences_per_s", "usd_per_1k_sentences",
              "cached_calls_fraction", "failed_calls", "ratios", "tokens_per_sentence"}


def test_bench_writes_table_json_and_plot(tmp_path, fake_endpoints):
    argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path),
            "--methods", "direct,type-agents,crossagentie,student", "--endpoint", "http://fake/v1",
            "--model-name", "fake", "--student-endpoint", "http://fake/v1", "--price-as", "gpt-4o-mini"]
    assert bench.main(argv) == 0
    data = json.loads((tmp_path / "bench.json").read_text())
    assert [r["method"] for r in data["rows"]] == ["direct", "type-agents", "crossagentie", "student"]
    assert data["student_adapter"] == "student at http://fake/v1"  # --student-model's default
    assert all(ROW_FIELDS <= set(row) and row["sentences"] == 2 for row in data["rows"])
    # the smallest valid answers name no entity: one call a sentence, or one per entity type agent (4), nothing to debate
    assert {r["method"]: r["calls_per_sentence"] for r in data["rows"]} == {
        "direct": 1.0, "type-agents": 4.0, "crossagentie": 4.0, "student": 1.0}
    assert data["rows"][2]["ratios"]["tokens_per_sentence"] == 1.0
    table = (tmp_path / "bench.md").read_text()
    assert "| method | NER P |" in table and "| student |" in table and "68.38" in table
    assert data["teacher_target"]["baseline"] == "direct" and "## Teacher target: " in table
    # the scripted answers are empty, so the student row says no answer was cut off
    assert data["student_target"]["teacher"] == "crossagentie" and "## Student target: " in table
    assert data["rows"][3]["truncated_calls"] == 0 and data["student_target"]["truncated_fraction"] == 0.0
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "report.html").read_text()  # the viewer: every method's records, one to choose at a time
    assert all(f"<option>{m}</option>" in page for m in ("direct", "type-agents", "crossagentie", "student"))
    saved = json.loads((tmp_path / "rows" / "direct.json").read_text())
    assert list(saved) == ["settings", "wall_s", "model", "measured_at", "fresh"]
    assert MeasuredRow.model_validate(saved).model_dump(mode="json") == saved
    calls = len(fake_endpoints.requests)
    assert bench.main(argv) == 0  # same settings: rows reused, no new calls
    assert len(fake_endpoints.requests) == calls
    assert bench.main(argv + ["--fresh"]) == 0
    assert len(fake_endpoints.requests) > calls


def test_an_offset_bench_labels_and_scores_the_slice_after_it(tmp_path, fake_endpoints):
    argv = ["--config", "conll04", "--split", "dev", "--offset", "3", "--limit", "2", "--out", str(tmp_path),
            "--methods", "direct", "--endpoint", "http://fake/v1", "--model-name", "fake"]
    assert bench.main(argv) == 0
    dev = load_split(load_config(resolve_config_path("conll04")), "dev")
    labelled = read_records(tmp_path / "predictions" / "direct.jsonl")
    assert [r.id for r in labelled] == [r.id for r in dev[3:5]]
    data = json.loads((tmp_path / "bench.json").read_text())
    assert data["dataset"] == "conll04 dev 4-5" and data["rows"][0]["sentences"] == 2
    assert "student_adapter" not in data  # no student benched


def test_failed_records_are_not_scored_the_bench_exits_1_and_a_rerun_labels_them(tmp_path, fake_endpoints, capsys):
    from ie.llm.types import TransportError

    argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path), "--methods",
            "direct,student", "--endpoint", "http://fake/v1", "--model-name", "fake", "--student-endpoint",
            "http://fake/v1"]
    fake_endpoints.script = lambda r: TransportError("HTTP 503: down", status=503, retryable=False)
    assert bench.main(argv) == 1
    err = capsys.readouterr().err
    assert "error: no bench table: 2 of 2 records failed (2 HTTP 503" in err and "python -m serve.bench" in err
    assert "rows/direct.failures.jsonl" in err and not (tmp_path / "bench.json").exists()
    assert not (tmp_path / "rows" / "direct.json").exists()
    assert len((tmp_path / "rows" / "direct.partial.jsonl").read_text().splitlines()) == 1  # settings only
    fake_endpoints.script = minimal_answer  # the server is back
    assert bench.main(argv) == 0
    assert [r["sentences"] for r in json.loads((tmp_path / "bench.json").read_text())["rows"]] == [2, 2]
    assert not (tmp_path / "rows" / "direct.failures.jsonl").exists()


def test_a_second_bench_on_one_folder_is_refused_naming_the_first(tmp_path, capsys):
    from ie.runlock import RunLock

    argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path), "--methods", "direct",
            "--endpoint", "http://127.0.0.1:1/v1", "--model-name", "fake"]
    with RunLock(tmp_path):
        assert bench.main(argv) == 2
    assert f"{tmp_path}: another run writes here (pid " in capsys.readouterr().err


def test_bench_refuses_abbreviated_flags(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--method", "direct"])
    assert "unrecognized arguments: --method" in capsys.readouterr().err


def test_bench_flags_show_their_help_and_default(capsys, monkeypatch):
    from serve import bench

    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the help lines
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--fresh bypass the call cache, so latencies are real; rows measured so are kept, so a stopped fresh bench resumes (default False)" in text
    assert "(default direct,type-agents,crossagentie)" in text and "--verbose" in text


def test_bench_refuses_an_unknown_bench_key_naming_it(tmp_path, capsys):
    from serve import bench

    config = tmp_path / "c.yaml"
    config.write_text((importlib.import_module("ie.config").CONFIGS_DIR / "conll04.yaml").read_text()
                      .replace("  price_as: gpt-4o-mini\n", "  price_as: gpt-4o-mini\n  limt: 5\n"))
    assert bench.main(["--config", str(config), "--out", str(tmp_path / "out")]) == 2
    assert f"error: {config}: bench.limt: unknown setting" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_on_the_real_embedded_server(tmp_path):
    """direct and crossagentie through the real llama.cpp server (smollm2-135m), with the overhead replay and
    the teacher target checked on the two real rows."""
    argv = ["--config", "conll04", "--split", "dev", "--limit", "1", "--out", str(tmp_path), "--methods",
            "direct,crossagentie", "--model", "smollm2-135m", "--overhead"]
    assert bench.main(argv) == 0
    data = json.loads((tmp_path / "bench.json").read_text())
    row, teacher = data["rows"]
    target = data["teacher_target"]
    assert target["new_tokens_ratio"] == pytest.approx(teacher["new_tokens_per_sentence"] / row["new_tokens_per_sentence"])
    assert target["ner_f1_gain"] == pytest.approx(teacher["ner_f1"] - row["ner_f1"])
    assert target["met"] == (target["ner_f1_gain"] >= NER_F1_GAIN_TARGET and target["new_tokens_ratio"] <= TOKEN_RATIO_TARGET)
    assert "## Teacher target: " in (tmp_path / "bench.md").read_text()
    assert row["calls_per_sentence"] >= 1 and row["prompt_tokens_per_sentence"] > 50
    assert row["latency_p50_s"] > 0 and row["cached_calls_fraction"] == 0.0
    overhead = data["orchestration overhead"]["direct"]
    # --fresh is off but the folder is new: every call was fresh, and each is replayed
    assert overhead["replayed_calls"] == row["calls_per_sentence"] * row["sentences"] and overhead["replay_wall_s"] > 0
    # --fresh measures `direct` again (its row was measured with the cache on), then keeps that fresh row
    fresh = ["--config", "conll04", "--split", "dev", "--limit", "1", "--out", str(tmp_path), "--methods", "direct",
             "--model", "smollm2-135m", "--fresh"]
    assert bench.main(fresh) == 0
    saved = json.loads((tmp_path / "rows" / "direct.json").read_text())
    assert saved["fresh"] is True
    assert bench.main(fresh) == 0 and json.loads((tmp_path / "rows" / "direct.json").read_text()) == saved


def test_sigterm_stops_a_bench_with_one_line_exit_143_and_the_finished_record_kept(tmp_path):
    import math
    import sys

    from fault_server import FaultServer, Reply, first, sigterm_once_asked

    with FaultServer(first(1, Reply('{"entities": []}'), then=Reply(hang_s=math.inf))) as server:
        argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path), "--methods",
                "direct", "--concurrency", "1", "--endpoint", server.url, "--model-name", "m"]
        # the first record done, the second asked
        code, err = sigterm_once_asked([sys.executable, "-m", "serve.bench", *argv], server, requests=2)
    assert code == 143, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "terminated (SIGTERM): no bench table; each method's finished records are kept in its rows/ file; to resume, "
        f"run again: python -m serve.bench {' '.join(argv)}")
    assert not (tmp_path / "bench.json").exists()
    assert len((tmp_path / "rows" / "direct.partial.jsonl").read_text().splitlines()) == 2  # settings, one record
