"""The run: output folder, resuming without repeating calls, report and metrics, config and CLI errors."""
import json

import pytest

from ie.config import ConfigError, load_config, resolve_config_path
from ie.llm.cache import CallCache
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport
from ie.schema import Record, read_records, write_records
from teacher.__main__ import main
from teacher.config import TeacherConfig
from teacher.runner import run
from tests.schemas import nyt_strings_pair

GOLD = [
    Record(id="a", text="Dole met Reagan in Rome .", entities=[
        {"start": 0, "end": 4, "type": "Peop", "text": "Dole"}, {"start": 9, "end": 15, "type": "Peop", "text": "Reagan"},
        {"start": 19, "end": 23, "type": "Loc", "text": "Rome"}]),
    Record(id="b", text="NASA is in Houston .", entities=[
        {"start": 0, "end": 4, "type": "Org", "text": "NASA"}, {"start": 11, "end": 18, "type": "Loc", "text": "Houston"}],
        relations=[{"head": 0, "tail": 1, "type": "OrgBased_In"}]),
    Record(id="c", text="Paris is big .", entities=[{"start": 0, "end": 5, "type": "Loc", "text": "Paris"}]),
]

TEACHER_STATS = ["calls", "cached_calls", "prompt_tokens", "completion_tokens", "prefix_cached_tokens", "failed_calls",
                 "truncated_calls", "ungrounded_items", "conflicts", "unresolved_conflicts",
                 "agents_skipped_by_routing", "wall_s"]


def direct_answer(request):
    text = request.messages[1]["content"]
    names = [w for w in ("Dole", "Reagan", "Rome", "NASA", "Houston", "Paris") if f"{w} " in text.split("<text>")[1]]
    return json.dumps({"entities": [{"text": n, "type": "Loc", "confidence": 0.8} for n in names]})


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
    preds = read_records(out / "predictions.jsonl")
    assert sorted(p.id for p in preds) == ["a", "b", "c"]
    assert all(set(p.model_extra) >= {"debate", "stats", "confidence"} for p in preds)
    assert all(list(p.model_extra["stats"]) == TEACHER_STATS for p in preds)
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
    redone = [r for r in read_records(preds)][1:]
    assert len(redone) == 2 and all(r.model_extra["stats"]["cached_calls"] == 1 for r in redone)


def test_resuming_with_settings_that_change_labels_is_refused(tmp_path):
    cfg, transport = setup(tmp_path)
    run(cfg, client(transport, cfg.out_dir))
    cfg2, _ = setup(tmp_path, seed=7, limit=2)
    with pytest.raises(ConfigError, match="seed=0, not 7"):
        run(cfg2, client(transport, cfg.out_dir))


def test_config_rejects_bad_values_naming_the_field():
    with pytest.raises(ConfigError, match="teacher.method"):
        TeacherConfig(method="magic")
    with pytest.raises(ConfigError, match="teacher.model_name"):
        TeacherConfig(endpoint="http://x/v1")
    with pytest.raises(ConfigError, match="teacher.concurrency"):
        TeacherConfig(concurrency=0)
    with pytest.raises(ConfigError, match="teacher.summarizer: one of"):
        TeacherConfig(summarizer="vote")
    with pytest.raises(ConfigError, match="teacher.colour"):
        TeacherConfig.from_sources({"colour": 1}, {})
    assert TeacherConfig.from_sources({"max_rounds": 3}, {"max_rounds": 1, "seed": None}).max_rounds == 1


def test_cli_reports_config_errors_without_starting_a_server(capsys, tmp_path):
    assert main(["run", "--split", "dev", "--input", "x.txt", "--out", str(tmp_path)]) == 2
    assert "exactly one of --split" in capsys.readouterr().err
    assert main(["run", "--split", "dev", "--endpoint", "http://localhost:1/v1"]) == 2
    assert "--model-name" in capsys.readouterr().err


# --- failed records, resume on id and text, input and config errors ---

import asyncio
import logging

from fault_server import FaultServer, Reply, always, closed_port

from ie.failures import IncompleteRun
from ie.llm.types import TransportError
from ie.schema import RecordFormatError

DIRECT_OK = Reply('{"entities": []}')


def cli(tmp_path, url, *extra):
    """The teacher CLI's arguments for the `direct` method over GOLD at `url`, without retry waits."""
    data = tmp_path / "gold.jsonl"
    if not data.exists():
        write_records(data, GOLD)
    return ["run", "--config", "conll04", "--input", str(data), "--method", "direct", "--endpoint", url,
            "--model-name", "m", "--out", str(tmp_path / "out"), "--no-progress", "--retries", "0", *extra]


def test_closed_port_writes_no_prediction_exits_1_and_a_rerun_labels_it(tmp_path, capsys):
    port = closed_port()
    args = cli(tmp_path, f"http://127.0.0.1:{port}/v1")
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    summary = [line for line in err if line.startswith("error:")]
    assert len(summary) == 1
    assert "3 of 3 records failed (3 connection error" in summary[0] and "python -m teacher run" in summary[0]
    assert f"--endpoint http://127.0.0.1:{port}/v1" in summary[0]
    out = tmp_path / "out"
    assert not (out / "predictions.jsonl").exists() and not (out / "metrics.json").exists()
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert [f["id"] for f in failures] == ["a", "b", "c"] and {f["reason"] for f in failures} == {"connection error"}
    assert len(failures[0]["text_sha256"]) == 64
    with FaultServer(always(DIRECT_OK), port=port) as server:  # the server comes back on the same port
        assert main(args) == 0
    assert len(server.requests) == 3 and not (out / "failures.jsonl").exists()
    assert sorted(r.id for r in read_records(out / "predictions.jsonl")) == ["a", "b", "c"]
    assert (out / "metrics.json").exists()


def test_only_the_failed_records_are_retried(tmp_path):
    cfg, _ = setup(tmp_path)
    down = ScriptedTransport(lambda r: TransportError("HTTP 502", status=502) if "NASA" in r.messages[1]["content"]
                             else direct_answer(r))
    with pytest.raises(IncompleteRun, match=r"1 of 3 records failed \(1 HTTP 502") as info:
        run(cfg, LLMClient([down], cache=CallCache(cfg.out_dir / "calls.sqlite"), backoff_s=0.0, max_retries=1))
    assert [f.id for f in info.value.failures] == ["b"]
    assert sorted(r.id for r in read_records(cfg.out_dir / "predictions.jsonl")) == ["a", "c"]
    up = ScriptedTransport(direct_answer)
    run(cfg, client(up, cfg.out_dir))
    assert len(up.requests) == 1 and "NASA" in up.requests[0].messages[1]["content"]
    assert sorted(r.id for r in read_records(cfg.out_dir / "predictions.jsonl")) == ["a", "b", "c"]


def test_an_answer_that_never_validates_is_a_final_recorded_outcome(tmp_path):
    cfg, _ = setup(tmp_path)
    bad = ScriptedTransport(lambda r: "no JSON today")
    run(cfg, client(bad, cfg.out_dir))  # two re-asks each
    preds = read_records(cfg.out_dir / "predictions.jsonl")
    assert len(preds) == 3 and len(bad.requests) == 9
    for p in preds:
        assert p.entities == [] and p.model_extra["stats"]["failed_calls"] == 1 and "failed" not in p.model_extra["stats"]
        assert "invalid answer after 3 attempts" in p.model_extra["debate"]["calls"][0]["error"]
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


def test_a_record_makes_no_call_after_one_got_no_answer():
    from teacher.baselines import answer_models
    from teacher.context import RecordContext
    from teacher.templates import type_list

    t = ScriptedTransport(lambda r: TransportError("HTTP 401: no", retryable=False, status=401))
    schema = load_config(resolve_config_path("conll04")).task_schema
    ctx = RecordContext(GOLD[0], schema, LLMClient([t]), TeacherConfig(), "direct")

    async def two_asks():
        for _ in range(2):
            with pytest.raises(TransportError, match="HTTP 401"):
                await ctx.ask("direct", answer_models(ctx)["direct"], role="direct", agent="direct",
                              params=ctx.params("extract"), type_list=type_list(schema))
    asyncio.run(two_asks())
    assert len(t.requests) == 1


def test_read_timeout_flags_reach_the_endpoint(tmp_path, capsys):
    with FaultServer(always(Reply(hang_s=30))) as server:
        args = cli(tmp_path, server.url, "--timeout-first-token-s", "0.2", "--timeout-tokens-per-s", "10000")
        assert main(args) == 1
    assert "3 read timeout" in capsys.readouterr().err and len(server.requests) == 3


def test_a_key_echoed_in_an_error_reaches_no_output(tmp_path, capsys, monkeypatch, caplog):
    monkeypatch.setenv("TEACHER_TEST_KEY", "sk-echo-0123456789")
    with FaultServer(always(Reply(status=401, message="key {key} is not valid"))) as server:
        with caplog.at_level(logging.DEBUG):
            assert main(cli(tmp_path, server.url, "--api-key-env", "TEACHER_TEST_KEY")) == 1
    err = capsys.readouterr().err
    assert "3 HTTP 401" in err and "key [redacted] is not valid" in err
    written = "".join(p.read_text() for p in (tmp_path / "out").iterdir() if p.suffix in (".json", ".jsonl"))
    assert "sk-echo" not in err + written + caplog.text and "[redacted]" in written


def test_resume_keys_on_id_and_text_so_an_inserted_line_is_labelled(tmp_path, caplog):
    edit = tmp_path / "edit.txt"
    edit.write_text("Dole met Reagan in Rome .\nParis is big .\n")
    cfg = TeacherConfig(input=str(edit), method="direct", out=str(tmp_path / "out"), progress=False)
    t = ScriptedTransport(direct_answer)
    run(cfg, client(t, cfg.out_dir))
    edit.write_text("NASA is in Houston .\n" + edit.read_text())  # a new first line: every id shifts
    with caplog.at_level(logging.WARNING):
        run(cfg, client(t, cfg.out_dir))
    preds = {r.id: r for r in read_records(cfg.out_dir / "predictions.jsonl")}
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
    assert len(read_records(preds)) == 3 and len(transport.requests) == 3  # relabelled from the cache
    lines = preds.read_bytes().splitlines(keepends=True)
    preds.write_bytes(lines[0][:20] + b"\n" + b"".join(lines[1:]))
    with pytest.raises(RecordFormatError, match="predictions.jsonl:1: field '<json>'"):
        run(cfg, client(transport, cfg.out_dir))


def test_input_errors_name_the_file_and_line_and_an_empty_input_is_refused(tmp_path, capsys):
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"fine line\n\x89PNG\r\n\x1a\n\x00\x00")
    assert main(["run", "--input", str(binary), "--endpoint", "http://127.0.0.1:1/v1", "--model-name", "m",
                 "--out", str(tmp_path / "o1")]) == 2
    assert f"{binary}:2: field '<text>': byte 0x89 at column 1" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    assert main(["run", "--input", str(empty), "--endpoint", "http://127.0.0.1:1/v1", "--model-name", "m",
                 "--out", str(tmp_path / "o2")]) == 2
    assert "no records to label" in capsys.readouterr().err


def test_cli_refuses_an_unknown_split_a_mistyped_setting_and_abbreviated_flags(tmp_path, capsys):
    assert main(["run", "--split", "devv", "--endpoint", "http://127.0.0.1:1/v1", "--model-name", "m",
                 "--out", str(tmp_path / "o")]) == 2
    assert "no split 'devv'; known: ['dev', 'test', 'train']" in capsys.readouterr().err
    yaml_text = resolve_config_path("conll04").read_text().replace("max_rounds: 0", 'max_rounds: "two"')
    (tmp_path / "bad.yaml").write_text(yaml_text)
    assert main(["run", "--config", str(tmp_path / "bad.yaml"), "--split", "dev"]) == 2
    assert "teacher.max_rounds: expected int, got 'two'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--split", "dev", "--max-round", "1"])
    assert "unrecognized arguments: --max-round" in capsys.readouterr().err


def test_mention_rules_moved_to_the_dataset_config_and_defaults_suit_a_new_schema():
    for name in ("require_capital_or_digit", "max_mention_words"):
        with pytest.raises(ConfigError, match=rf"teacher.{name}: moved to the dataset config's `mentions:`"):
            TeacherConfig.from_sources({name: 5}, {})
    cfg = TeacherConfig()
    assert (cfg.summarizer, cfg.max_rounds, cfg.re_mode) == ("likelihood", 0, None)


def test_report_scores_as_the_config_s_score_section_says(tmp_path):
    from ie.config import load_config, resolve_config_path
    from teacher.report import write_report

    nyt = load_config(resolve_config_path("nyt"))
    gold, pred = nyt_strings_pair()  # the same triple on the other "Iceland": right as strings, wrong if strict
    metrics = write_report(tmp_path, [gold], [pred], nyt, TeacherConfig(config="nyt"))
    assert metrics.re.mode == "strings" and metrics.re.micro.tp == 1
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics.as_dict()
    assert "RE (strings)" in (tmp_path / "report.md").read_text()
    strict = write_report(tmp_path, [gold], [pred], nyt, TeacherConfig(config="nyt", re_mode="strict"))
    assert strict.re.micro.tp == 0


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


def test_transcript_and_stats_keep_their_json_form():
    from ie.record_stats import RecordStats
    from teacher.context import ConflictLog, Transcript

    conflict = {"id": "e1", "kind": "label", "options": ['"A" is Loc', '"A" is Org'], "agents": ["ner:Loc", "ner:Org"],
                "stances": [{"round": 1, "agent": "ner:Loc", "choice": "B", "confidence": 0.8, "reason": "r"}],
                "settled_by": "consensus_round_2", "winner": '"A" is Org'}
    log = ConflictLog.model_validate(conflict)
    assert log.settled_by.round == 2 and log.agents[1].name == "Org" and log.model_dump(mode="json") == conflict
    transcript = Transcript(method="crossagentie", conflicts=[log], notes=["n"])
    assert transcript.as_dict() == {"method": "crossagentie", "calls": [], "conflicts": [conflict], "alignment": [],
                                    "extents": [], "notes": ["n"], "routing": {}}
    stats = RecordStats(**dict.fromkeys(TEACHER_STATS[:-1], 0), wall_s=0.5)
    stats.failed, stats.error = "timeout", "TimeoutError: t"  # as `label_one` marks a record that did not finish
    assert list(stats.as_dict()) == [*TEACHER_STATS, "failed", "error"]
