"""serve.bench: pure metrics, the three output files with their documented fields, row reuse, real model."""
import json
import math

import pytest

from ie.config import REPO_ROOT
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport
from ie.schema import Record
from ie.scoring import PRF, NerErrors, RelationScores, Scores, TaskScores
from serve import bench, bench_run
from serve.bench_metrics import (
    NER_F1_GAIN_TARGET,
    TOKEN_RATIO_TARGET,
    MethodMetrics,
    Price,
    TeacherTarget,
    add_ratios,
    calculate_metrics,
    percentile,
    teacher_target,
)
from serve.bench_report import target_lines
from serve.bench_run import MeasuredRow
from tests.schemas import nyt_strings_pair

ROW_FIELDS = {"method", "model", "sentences", "ner_p", "ner_r", "ner_f1", "re_p", "re_r", "re_f1",
              "calls_per_sentence", "prompt_tokens_per_sentence", "completion_tokens_per_sentence",
              "latency_p50_s", "latency_p95_s", "throughput_sentences_per_s", "usd_per_1k_sentences",
              "cached_calls_fraction", "failed_calls", "ratios", "tokens_per_sentence"}


def test_percentile_interpolates():
    assert percentile([], 50) == 0.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)


def _scores(ner=(0.0, 0.0, 0.0), re=(0.0, 0.0, 0.0)) -> Scores:
    """Scores with these micro (precision, recall, F1), the only ones the bench rows read."""
    def prf(p, r, f1):
        return PRF(precision=p, recall=r, f1=f1, tp=0, fp=0, fn=0)

    return Scores(ner=TaskScores(micro=prf(*ner)), re=RelationScores(micro=prf(*re), mode="strict", symmetric_types=[]),
                  errors=NerErrors(), records=0, unmatched_predictions=0)


def _pred(calls, prompt, completion, wall, cached=0, prefix=0):
    return Record(id="x", text="t", stats={"calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
                                           "wall_s": wall, "cached_calls": cached, "prefix_cached_tokens": prefix})


def test_calculate_metrics_and_ratios():
    scores = _scores(ner=(0.5, 0.25, 1 / 3))
    preds = [_pred(2, 100, 20, 1.0, cached=1), _pred(4, 300, 60, 3.0)]
    m = calculate_metrics("direct", "m", scores, preds, wall_s=4.0, price=Price(input=1.0, output=2.0))
    assert m.calls_per_sentence == 3 and m.prompt_tokens_per_sentence == 200 and m.tokens_per_sentence == 240
    assert m.ner_f1 == pytest.approx(100 / 3) and m.throughput_sentences_per_s == 0.5
    assert m.usd_per_1k_sentences == pytest.approx(1000 * (200 * 1.0 + 40 * 2.0) / 1e6)
    assert m.cached_calls_fraction == pytest.approx(1 / 6) and m.latency_p50_s == 2.0
    ref = calculate_metrics("crossagentie", "m", scores, [_pred(12, 1000, 200, 9.0)], 9.0, Price())
    add_ratios([m, ref])
    assert m.ratios["calls_per_sentence"] == pytest.approx(0.25) and ref.ratios["ner_f1"] == 1.0
    assert math.isnan(m.ratios["usd_per_1k_sentences"])  # the reference costs $0


def test_prefix_cached_tokens_are_new_tokens_saved_and_priced_at_the_cached_rate():
    scores = _scores()
    price = Price(input=1.0, output=2.0, cached_input=0.25)
    m = calculate_metrics("crossagentie", "m", scores, [_pred(5, 1000, 100, 1.0, prefix=600)], 1.0, price)
    assert m.tokens_per_sentence == 1100 and m.new_tokens_per_sentence == 500
    assert m.usd_per_1k_sentences == pytest.approx(1000 * (400 * 1.0 + 600 * 0.25 + 100 * 2.0) / 1e6)
    direct = calculate_metrics("direct", "m", scores, [_pred(1, 300, 50, 1.0, prefix=100)], 1.0, price)
    add_ratios([direct, m])
    assert direct.ratios["new_tokens_per_sentence"] == pytest.approx(250 / 500)
    assert direct.ratios["tokens_per_sentence"] == pytest.approx(350 / 1100)


def _f1_row(method, f1, prompt, completion, prefix):
    scores = _scores(ner=(f1, f1, f1))
    price = Price(input=1.0, output=2.0, cached_input=0.5)
    return calculate_metrics(method, "m", scores, [_pred(1, prompt, completion, 1.0, prefix=prefix)], 1.0, price)


def test_teacher_target_counts_new_tokens_and_reports_the_count_in_full():
    direct = _f1_row("direct", 0.45, 300, 200, 50)  # 500 tokens, 450 new
    # +6 points at 2100 tokens (4.2x in full) of which 1790 new (3.98x): met
    met = teacher_target([direct, _f1_row("crossagentie", 0.51, 1700, 400, 310)])
    assert met.met and met.ner_f1_gain == pytest.approx(6.0)
    assert met.new_tokens_ratio == pytest.approx(1790 / 450) and met.tokens_ratio_in_full == pytest.approx(4.2)
    # one new token more than 4x, or a gain under 5 points: not met
    assert not teacher_target([direct, _f1_row("crossagentie", 0.51, 1700, 400, 299)]).met
    assert not teacher_target([direct, _f1_row("crossagentie", 0.499, 1000, 100, 500)]).met
    assert teacher_target([direct]) is None


def test_the_target_line_says_when_no_row_has_a_price():
    direct, ours = _f1_row("direct", 0.45, 300, 200, 50), _f1_row("crossagentie", 0.51, 1700, 400, 310)
    assert "× the $ per sentence" in target_lines(teacher_target([direct, ours]))[-1]
    free = [r.model_copy(update={"usd_per_1k_sentences": 0.0}) for r in (direct, ours)]
    line = target_lines(teacher_target(free))[-1]
    assert "nan" not in line and "no $ ratio" in line


def test_the_saved_bench_rows_and_target_read_back_to_the_same_json():
    files = sorted((REPO_ROOT / "results").glob("*/bench.json"))
    assert files
    for path in files:
        bench = json.loads(path.read_text())
        rows = [MethodMetrics.model_validate(r) for r in bench["rows"]]
        assert json.dumps([r.as_dict() for r in rows]) == json.dumps(bench["rows"]), path  # NaN, order included
        target = TeacherTarget.model_validate(bench["teacher_target"])
        assert json.dumps(target.as_dict()) == json.dumps(bench["teacher_target"]) == json.dumps(
            teacher_target(rows).as_dict()), path


def test_a_measured_row_keeps_its_json_form():
    row = {"settings": {"method": "direct", "max_tokens": 160}, "wall_s": 12.5, "model": "m",
           "measured_at": "2026-12-02T13:54:02", "fresh": False}
    assert MeasuredRow.model_validate(row).model_dump(mode="json") == row
    overhead = {"teacher_wall_s": 12.5, "replay_wall_s": 10.0, "replayed_calls": 30, "overhead_fraction": 0.2}
    saved = MeasuredRow.model_validate({**row, "overhead": overhead})
    assert json.dumps(saved.model_dump(mode="json")) == json.dumps({**row, "overhead": overhead})


def _minimal(schema, defs):
    """The smallest instance of a JSON schema: what a scripted model answers to any agent."""
    if "$ref" in schema:
        return _minimal(defs[schema["$ref"].split("/")[-1]], defs)
    if "anyOf" in schema:
        return _minimal(schema["anyOf"][0], defs)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _minimal(v, defs) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])}
    return {"array": [], "string": "", "number": 0.5, "integer": 0, "boolean": False}.get(kind)


def _scripted(request):
    schema = request.response_format["json_schema"]["schema"]
    return json.dumps(_minimal(schema, schema.get("$defs", {})))


@pytest.fixture
def fake_endpoints(monkeypatch):
    transport = ScriptedTransport(_scripted)
    monkeypatch.setattr(bench_run.LLMClient, "from_endpoints",
                        classmethod(lambda cls, eps, cache_path=None, **kw: LLMClient([transport], **kw)))
    return transport


def test_bench_writes_table_json_and_plot(tmp_path, fake_endpoints):
    argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path),
            "--methods", "direct,type-agents,crossagentie,student", "--endpoint", "http://fake/v1",
            "--model-name", "fake", "--student-endpoint", "http://fake/v1", "--price-as", "gpt-4o-mini"]
    assert bench.main(argv) == 0
    data = json.loads((tmp_path / "bench.json").read_text())
    assert [r["method"] for r in data["rows"]] == ["direct", "type-agents", "crossagentie", "student"]
    assert all(ROW_FIELDS <= set(row) and row["sentences"] == 2 for row in data["rows"])
    # the smallest valid answers name no entity: one call a sentence, or one per entity type agent (4), nothing to debate
    assert {r["method"]: r["calls_per_sentence"] for r in data["rows"]} == {
        "direct": 1.0, "type-agents": 4.0, "crossagentie": 4.0, "student": 1.0}
    assert data["rows"][2]["ratios"]["tokens_per_sentence"] == 1.0
    table = (tmp_path / "bench.md").read_text()
    assert "| method | NER P |" in table and "| student |" in table and "68.38" in table
    assert data["teacher_target"]["baseline"] == "direct" and "## Teacher target: " in table
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((tmp_path / "rows" / "direct.json").read_text())
    assert list(saved) == ["settings", "wall_s", "model", "measured_at", "fresh"]
    assert MeasuredRow.model_validate(saved).model_dump(mode="json") == saved
    calls = len(fake_endpoints.requests)
    assert bench.main(argv) == 0  # same settings: rows reused, no new calls
    assert len(fake_endpoints.requests) == calls
    assert bench.main(argv + ["--fresh"]) == 0
    assert len(fake_endpoints.requests) > calls


def test_rows_are_not_reused_once_the_config_changes(tmp_path, fake_endpoints):
    from ie.config import resolve_config_path

    config = tmp_path / "conll04.yaml"
    config.write_text(resolve_config_path("conll04").read_text())
    argv = ["--config", str(config), "--split", "dev", "--limit", "1", "--out", str(tmp_path / "b"),
            "--methods", "direct", "--endpoint", "http://fake/v1", "--model-name", "fake"]
    assert bench.main(argv) == 0
    calls = len(fake_endpoints.requests)
    assert bench.main(argv) == 0 and len(fake_endpoints.requests) == calls
    config.write_text(config.read_text().replace("max_tokens: 160", "max_tokens: 150"))
    assert bench.main(argv) == 0 and len(fake_endpoints.requests) > calls  # new labels: measured again


def test_a_stopped_bench_resumes_from_the_records_it_finished(tmp_path, fake_endpoints):
    argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path), "--methods", "direct",
            "--endpoint", "http://fake/v1", "--model-name", "fake"]
    assert bench.main(argv) == 0
    partial = (tmp_path / "rows" / "direct.partial.jsonl").read_text().splitlines()
    assert len(partial) == 3  # settings, then one line per finished record
    first = json.loads(partial[1])
    # as if stopped after the first record: the row was never written, one record was
    (tmp_path / "rows" / "direct.json").unlink()
    (tmp_path / "rows" / "direct.partial.jsonl").write_text("\n".join(partial[:2]) + "\n")
    calls = len(fake_endpoints.requests)
    assert bench.main(argv) == 0
    assert len(fake_endpoints.requests) == calls + 1  # only the unfinished record is labelled
    [kept, _] = [json.loads(x) for x in (tmp_path / "predictions" / "direct.jsonl").read_text().splitlines()]
    assert kept["stats"] == first["stats"]  # measured once, kept as measured
    # A shorter run reuses the finished record too, and its wall time is that record's alone.
    store = tmp_path / "rows" / "direct.partial.jsonl"
    lines = store.read_text().splitlines()
    timed = [lines[0]] + [json.dumps({**json.loads(x), "stats": {**json.loads(x)["stats"], "wall_s": w}})
                          for x, w in zip(lines[1:], (5.0, 7.0))]
    store.write_text("\n".join(timed) + "\n")
    shorter = argv[:5] + ["1"] + argv[6:]
    assert shorter[4:6] == ["--limit", "1"] and bench.main(shorter) == 0
    assert len(fake_endpoints.requests) == calls + 1
    assert json.loads((tmp_path / "rows" / "direct.json").read_text())["wall_s"] == pytest.approx(5.0, abs=0.5)


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
    fake_endpoints.script = _scripted  # the server is back
    assert bench.main(argv) == 0
    assert [r["sentences"] for r in json.loads((tmp_path / "bench.json").read_text())["rows"]] == [2, 2]
    assert not (tmp_path / "rows" / "direct.failures.jsonl").exists()


def test_bench_refuses_abbreviated_flags(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--method", "direct"])
    assert "unrecognized arguments: --method" in capsys.readouterr().err


def test_student_needs_an_adapter_or_endpoint(tmp_path, capsys):
    assert bench.main(["--methods", "student", "--out", str(tmp_path)]) == 2
    assert "needs --student-adapter" in capsys.readouterr().err


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


def test_bench_scores_as_the_config_s_score_section_says(tmp_path):
    from ie.config import load_config, resolve_config_path
    from ie.schema import write_records

    nyt = load_config(resolve_config_path("nyt"))
    gold, pred = nyt_strings_pair()
    write_records(tmp_path / "predictions" / "direct.jsonl", [pred])
    row = MeasuredRow(settings={}, wall_s=1.0, model="m", measured_at="2026-12-02T13:54:02", fresh=False)
    metrics = bench_run._metrics("direct", row, [gold], tmp_path, nyt, bench.BenchConfig(config="nyt"))
    assert metrics.re_f1 == 100.0  # strings mode (configs/nyt.yaml `score:`): the triple's strings match
