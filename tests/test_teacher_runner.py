"""The run (`teacher.runner`): output folder, resuming without repeating calls, failed records kept out and
retried, input errors."""
import asyncio
import json
import logging

import pytest

from ie.config import ConfigError
from ie.failures import IncompleteRun
from ie.llm.cache import CallCache
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport
from ie.llm.types import TransportError
from ie.records import read_labelled
from ie.schema import Record, RecordFormatError, write_records
from teacher.config import TeacherConfig
from teacher.runner import run
from tests.teacher_script import FAST, GOLD, TEACHER_STATS, direct_answer


def setup(tmp_path, **overrides):
    data = tmp_path / "gold.jsonl"
    write_records(data, GOLD)
    cfg = TeacherConfig(input=str(data), method="direct", out=str(tmp_path / "out"), progress=False, **overrides)
    transport = ScriptedTransport(direct_answer)
    return cfg, transport


def client(transport, out):
    return LLMClient([transport], cache=CallCache(out / "calls.sqlite"))


def test_run_writes_predictions_config_metrics_and_report(tmp_path):
    cfg, transport = setup(tmp_path, api_key_env="SECRET_KEY_VAR")
    out = run(cfg, client(transport, cfg.out_dir))
    preds = read_labelled(out / "predictions.jsonl")
    assert sorted(p.id for p in preds) == ["a", "b", "c"]
    assert all(p.debate and p.confidence is not None for p in preds)
    assert all(list(p.stats.as_dict()) == TEACHER_STATS for p in preds)
    saved = json.loads((out / "config.json").read_text())
    assert saved["method"] == "direct" and saved["api_key_env"] == "SECRET_KEY_VAR"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ner"]["micro"]["tp"] == 3 and metrics["teacher"]["per_record"]["calls"] == 1
    report = (out / "report.md").read_text()
    assert "## NER (strict)" in report and "| Loc |" in report and "Cost per record" in report


def test_rerun_skips_finished_records_and_a_killed_run_repeats_no_call(tmp_path):
    cfg, transport = setup(tmp_path)
    run(cfg, client(transport, cfg.out_dir))
    assert len(transport.requests) == 3
    run(cfg, client(transport, cfg.out_dir))
    assert len(transport.requests) == 3  # everything finished: skipped
    preds = cfg.out_dir / "predictions.jsonl"
    lines = preds.read_text().splitlines()
    preds.write_text("\n".join(lines[:1]) + "\n")  # as if killed with two records in flight
    run(cfg, client(transport, cfg.out_dir))
    assert len(transport.requests) == 3  # relabelled from the call cache
    redone = [r for r in read_labelled(preds)][1:]
    assert len(redone) == 2 and all(r.stats.cached_calls == 1 for r in redone)


def test_resuming_with_settings_that_change_labels_is_refused(tmp_path):
    cfg, transport = setup(tmp_path)
    run(cfg, client(transport, cfg.out_dir))
    cfg2, _ = setup(tmp_path, seed=7, limit=2)
    with pytest.raises(ConfigError, match="seed=0, not 7"):
        run(cfg2, client(transport, cfg.out_dir))


def test_only_the_failed_records_are_retried(tmp_path):
    cfg, _ = setup(tmp_path)
    down = ScriptedTransport(lambda r: TransportError("HTTP 502", status=502) if "NASA" in r.messages[1]["content"]
                             else direct_answer(r))
    with pytest.raises(IncompleteRun, match=r"1 of 3 records failed \(1 HTTP 502") as info:
        run(cfg, LLMClient([down], cache=CallCache(cfg.out_dir / "calls.sqlite"), backoff_s=0.0, max_retries=1))
    assert [f.id for f in info.value.failures] == ["b"]
    assert sorted(r.id for r in read_labelled(cfg.out_dir / "predictions.jsonl")) == ["a", "c"]
    up = ScriptedTransport(direct_answer)
    run(cfg, client(up, cfg.out_dir))
    assert len(up.requests) == 1 and "NASA" in up.requests[0].messages[1]["content"]
    assert sorted(r.id for r in read_labelled(cfg.out_dir / "predictions.jsonl")) == ["a", "b", "c"]


def test_an_answer_that_never_validates_is_a_final_recorded_outcome(tmp_path):
    cfg, _ = setup(tmp_path)
    bad = ScriptedTransport(lambda r: "no JSON today")
    run(cfg, client(bad, cfg.out_dir))  # two re-asks each
    preds = read_labelled(cfg.out_dir / "predictions.jsonl")
    assert len(preds) == 3 and len(bad.requests) == 9
    for p in preds:
        assert p.entities == [] and p.stats.failed_calls == 1 and "failed" not in p.stats
        assert "invalid answer after 3 attempts" in p.debate.calls[0].error
    run(cfg, client(bad, cfg.out_dir))
    assert len(bad.requests) == 9  # finished: not asked again


def test_a_record_past_its_time_budget_fails_with_that_reason(tmp_path):
    class Hanging(ScriptedTransport):
        async def __call__(self, request):
            await asyncio.sleep(30)

    cfg, _ = setup(tmp_path, timeout_record_s=0.2)
    with pytest.raises(IncompleteRun, match="3 time budget") as info:
        run(cfg, client(Hanging(direct_answer), cfg.out_dir))
    assert "within its time budget of 0.2 s" in info.value.failures[0].error
    assert not (cfg.out_dir / "predictions.jsonl").exists()


def test_resume_keys_on_id_and_text_so_an_inserted_line_is_labelled(tmp_path, caplog):
    edit = tmp_path / "edit.txt"
    edit.write_text("Dole met Reagan in Rome .\nParis is big .\n")
    cfg = TeacherConfig(input=str(edit), method="direct", out=str(tmp_path / "out"), progress=False)
    t = ScriptedTransport(direct_answer)
    run(cfg, client(t, cfg.out_dir))
    edit.write_text("NASA is in Houston .\n" + edit.read_text())  # a new first line: every id shifts
    with caplog.at_level(logging.WARNING):
        run(cfg, client(t, cfg.out_dir))
    preds = {r.id: r for r in read_labelled(cfg.out_dir / "predictions.jsonl")}
    assert {i: r.text for i, r in preds.items()} == {
        "edit-0": "NASA is in Houston .", "edit-1": "Dole met Reagan in Rome .", "edit-2": "Paris is big ."}
    assert [e.text for e in preds["edit-0"].entities] == ["NASA", "Houston"]
    assert "2 labelled ids have another text" in caplog.text
    assert len(t.requests) == 3  # the new sentence is asked; the moved ones come from the call cache


def test_duplicate_ids_are_refused_before_the_first_call(tmp_path):
    data = tmp_path / "dup.jsonl"
    write_records(data, [GOLD[0], GOLD[1], Record(id="a", text="Other text .")])
    cfg = TeacherConfig(input=str(data), method="direct", out=str(tmp_path / "out"), progress=False)
    t = ScriptedTransport(direct_answer)
    with pytest.raises(RecordFormatError, match=r"dup.jsonl:3: field 'id': 'a' repeats the id of line 1"):
        run(cfg, client(t, tmp_path))
    assert t.requests == []


def test_a_torn_last_line_is_dropped_and_relabelled_but_a_torn_line_elsewhere_is_an_error(tmp_path, caplog):
    cfg, transport = setup(tmp_path)
    run(cfg, client(transport, cfg.out_dir))
    preds = cfg.out_dir / "predictions.jsonl"
    lines = preds.read_bytes().splitlines(keepends=True)
    preds.write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # killed mid-write
    with caplog.at_level(logging.WARNING):
        run(cfg, client(transport, cfg.out_dir))
    assert "predictions.jsonl:3: dropped a half-written last line" in caplog.text
    assert len(read_labelled(preds)) == 3 and len(transport.requests) == 3  # relabelled from the cache
    lines = preds.read_bytes().splitlines(keepends=True)
    preds.write_bytes(lines[0][:20] + b"\n" + b"".join(lines[1:]))
    with pytest.raises(RecordFormatError, match="predictions.jsonl:1: field '<json>'"):
        run(cfg, client(transport, cfg.out_dir))


def test_resuming_after_the_mention_rules_changed_is_refused(tmp_path):
    from ie.config import resolve_config_path

    config = tmp_path / "conll04.yaml"
    config.write_text(resolve_config_path("conll04").read_text())
    cfg, transport = setup(tmp_path, config=str(config))
    run(cfg, client(transport, cfg.out_dir))
    assert json.loads((cfg.out_dir / "config.json").read_text())["mentions"]["max_words"] == 5
    config.write_text(config.read_text().replace("  max_words: 5", "  max_words: 6"))
    with pytest.raises(ConfigError, match="holds a run with mentions="):
        run(cfg, client(transport, cfg.out_dir))


@pytest.mark.slow
def test_unanswered_calls_leave_records_unfinished_and_a_rerun_labels_them(endpoint, sentences, tmp_path):
    """Against the real llama.cpp server: a read timeout far below what smollm2 needs leaves both records
    unfinished (not written, listed with their reason); the same run with the default timeouts labels them."""
    from dataclasses import replace

    from ie.failures import IncompleteRun
    from ie.llm.client import Timeouts

    cfg = TeacherConfig(input=str(sentences), method="direct", out=str(tmp_path / "t"), **FAST)
    hasty = replace(endpoint, timeouts=Timeouts(first_token_s=0.001, min_tokens_per_s=1e6))
    cache = tmp_path / "t" / "calls.sqlite"
    with pytest.raises(IncompleteRun, match=r"2 of 2 records failed \(2 read timeout"):
        run(cfg, LLMClient.from_endpoints([hasty], cache_path=cache, concurrency=2, max_parse_retries=0))
    assert not (tmp_path / "t" / "predictions.jsonl").exists()
    failures = [json.loads(x) for x in (tmp_path / "t" / "failures.jsonl").read_text().splitlines()]
    assert {f["reason"] for f in failures} == {"read timeout"} and len(failures) == 2
    out = run(cfg, LLMClient.from_endpoints([endpoint], cache_path=cache, concurrency=2, max_parse_retries=0))
    preds = read_labelled(out / "predictions.jsonl")
    assert len(preds) == 2 and all(p.stats.calls == 1 for p in preds)  # direct, no re-asks
    assert not (out / "failures.jsonl").exists()
