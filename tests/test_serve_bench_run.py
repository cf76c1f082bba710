"""`serve.bench_run`: measured rows keep their JSON form, are reused only for the same settings and inputs,
resume from the records they finished, and are scored as the dataset config says."""
import json

import pytest

from serve import bench, bench_run
from serve.bench_run import MeasuredRow
from tests.schemas import nyt_strings_pair


def test_a_measured_row_keeps_its_json_form():
    row = {"settings": {"method": "direct", "max_tokens": 160}, "wall_s": 12.5, "model": "m",
           "measured_at": "2026-12-02T13:54:02", "fresh": False}
    assert MeasuredRow.model_validate(row).model_dump(mode="json") == row
    overhead = {"teacher_wall_s": 12.5, "replay_wall_s": 10.0, "replayed_calls": 30, "overhead_fraction": 0.2}
    saved = MeasuredRow.model_validate({**row, "overhead": overhead})
    assert json.dumps(saved.model_dump(mode="json")) == json.dumps({**row, "overhead": overhead})


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
    # as if killed while writing the second record: the row was never written, one record was, and a torn line
    (tmp_path / "rows" / "direct.json").unlink()
    (tmp_path / "rows" / "direct.partial.jsonl").write_text("\n".join(partial[:2]) + "\n" + partial[2][:40])
    calls = len(fake_endpoints.requests)
    assert bench.main(argv) == 0
    assert len(fake_endpoints.requests) == calls + 1  # only the unfinished record is labelled
    [kept, _] = [json.loads(x) for x in (tmp_path / "predictions" / "direct.jsonl").read_text().splitlines()]
    assert kept["stats"] == first["stats"]  # measured once, kept as measured
    assert len((tmp_path / "rows" / "direct.partial.jsonl").read_text().splitlines()) == 3  # torn line replaced
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


def test_a_stopped_fresh_bench_resumes_fresh_and_keeps_its_rows(tmp_path, fake_endpoints):
    """--fresh keeps what it measured fresh (a stopped fresh bench resumes), never what the call cache replayed."""
    argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path), "--methods",
            "direct,type-agents", "--endpoint", "http://fake/v1", "--model-name", "fake"]
    assert bench.main(argv) == 0
    calls = len(fake_endpoints.requests)
    assert bench.main(argv + ["--fresh"]) == 0  # rows measured with the cache on: measured again
    fresh_calls = len(fake_endpoints.requests) - calls
    assert fresh_calls == calls
    saved = json.loads((tmp_path / "rows" / "type-agents.json").read_text())
    assert saved["fresh"] is True
    assert bench.main(argv + ["--fresh"]) == 0  # both rows measured fresh: kept
    assert len(fake_endpoints.requests) == 2 * calls
    # as if stopped during type-agents' second record: direct's row kept, one type-agents record kept
    store = tmp_path / "rows" / "type-agents.partial.jsonl"
    lines = store.read_text().splitlines()
    assert json.loads(lines[0])["fresh"] is True
    (tmp_path / "rows" / "type-agents.json").unlink()
    store.write_text("\n".join(lines[:2]) + "\n")
    assert bench.main(argv + ["--fresh"]) == 0
    assert len(fake_endpoints.requests) == 2 * calls + 4  # one record's four entity agents
    assert json.loads((tmp_path / "rows" / "type-agents.json").read_text())["fresh"] is True
    # a bench with the cache on may add to fresh records; they are no longer all fresh, so --fresh redoes them
    (tmp_path / "rows" / "type-agents.json").unlink()
    store.write_text("\n".join(store.read_text().splitlines()[:2]) + "\n")
    assert bench.main(argv) == 0 and json.loads(store.read_text().splitlines()[0])["fresh"] is False
    asked = len(fake_endpoints.requests)
    (tmp_path / "rows" / "type-agents.json").unlink()
    assert bench.main(argv + ["--fresh"]) == 0
    assert len(fake_endpoints.requests) == asked + 8  # both records, four agents each


def test_bench_scores_as_the_config_s_score_section_says(tmp_path):
    from ie.config import load_config, resolve_config_path
    from ie.schema import write_records

    nyt = load_config(resolve_config_path("nyt"))
    gold, pred = nyt_strings_pair()
    write_records(tmp_path / "predictions" / "direct.jsonl", [pred])
    row = MeasuredRow(settings={}, wall_s=1.0, model="m", measured_at="2026-12-02T13:54:02", fresh=False)
    metrics = bench_run._metrics("direct", row, [gold], tmp_path, nyt, bench.BenchConfig(config="nyt"))
    assert metrics.re_f1 == 100.0  # strings mode (configs/nyt.yaml `score:`): the triple's strings match


def test_a_partial_row_with_a_bad_line_inside_names_the_file_and_line(tmp_path, fake_endpoints, capsys):
    argv = ["--config", "conll04", "--split", "dev", "--limit", "2", "--out", str(tmp_path), "--methods", "direct",
            "--endpoint", "http://fake/v1", "--model-name", "fake"]
    assert bench.main(argv) == 0
    store = tmp_path / "rows" / "direct.partial.jsonl"
    lines = store.read_text().splitlines()
    store.write_text("\n".join([lines[0], "{oops", lines[2]]) + "\n")
    (tmp_path / "rows" / "direct.json").unlink()
    assert bench.main(argv) != 0
    assert "direct.partial.jsonl:2: not a finished record" in capsys.readouterr().err
