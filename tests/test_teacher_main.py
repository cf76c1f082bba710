"""`python -m teacher` (teacher/__main__.py): config and input errors before any server starts, the one-line
failure summary, and what a person sees at the end of a run, with library loggers quiet unless --verbose
(`ie.logs`)."""
import json
import logging
from pathlib import Path

import pytest
from fault_server import FaultServer, Reply, always, closed_port, first

from ie.config import resolve_config_path
from ie.logs import setup_logging
from ie.schema import Record, append_record, read_records, write_records
from teacher.__main__ import main
from tests.teacher_script import GOLD

TWO = GOLD[:2]  # two records: one with a relation
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


DIRECT_OK = Reply('{"entities": []}')


def cli_args(tmp_path: Path, url: str, *extra: str, records=GOLD) -> list[str]:
    """The teacher CLI's arguments for the `direct` method over `records` at `url`, without retry waits."""
    data = tmp_path / "gold.jsonl"
    write_records(data, records)
    return ["run", "--config", "conll04", "--input", str(data), "--method", "direct", "--endpoint", url,
            "--model-name", "m", "--out", str(tmp_path / "out"), "--no-progress", "--retries", "0", *extra]


def test_cli_reports_config_errors_without_starting_a_server(capsys, tmp_path):
    assert main(["run", "--split", "dev", "--input", "x.txt", "--out", str(tmp_path)]) == 2
    assert "exactly one of --split" in capsys.readouterr().err
    assert main(["run", "--split", "dev", "--endpoint", "http://localhost:1/v1"]) == 2
    assert "--model-name" in capsys.readouterr().err


def test_closed_port_writes_no_prediction_exits_1_and_a_rerun_labels_it(tmp_path, capsys):
    port = closed_port()
    args = cli_args(tmp_path, f"http://127.0.0.1:{port}/v1")
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


def test_read_timeout_flags_reach_the_endpoint(tmp_path, capsys):
    with FaultServer(always(Reply(hang_s=30))) as server:
        args = cli_args(tmp_path, server.url, "--timeout-first-token-s", "0.2", "--timeout-tokens-per-s", "10000")
        assert main(args) == 1
    assert "3 read timeout" in capsys.readouterr().err and len(server.requests) == 3


def test_a_key_echoed_in_an_error_reaches_no_output(tmp_path, capsys, monkeypatch, caplog):
    monkeypatch.setenv("TEACHER_TEST_KEY", "sk-echo-0123456789")
    with FaultServer(always(Reply(status=401, message="key {key} is not valid"))) as server:
        with caplog.at_level(logging.DEBUG):
            assert main(cli_args(tmp_path, server.url, "--api-key-env", "TEACHER_TEST_KEY")) == 1
    err = capsys.readouterr().err
    assert "3 HTTP 401" in err and "key [redacted] is not valid" in err
    written = "".join(p.read_text() for p in (tmp_path / "out").iterdir() if p.suffix in (".json", ".jsonl"))
    assert "sk-echo" not in err + written + caplog.text and "[redacted]" in written


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


def test_teacher_run_ends_with_the_summary_and_httpx_stays_quiet(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO)
    with FaultServer(every_name_a_location) as server:
        assert main(cli_args(tmp_path, server.url, records=TWO)) == 0
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
        assert main(cli_args(tmp_path, server.url, "--verbose", records=TWO)) == 0
    requests = [r for r in caplog.records if r.name.startswith("httpx") and "HTTP Request: POST" in r.getMessage()]
    assert len(requests) == 2


def test_a_failed_teacher_run_summarises_then_names_the_failures(tmp_path, capsys):
    assert main(cli_args(tmp_path, f"http://127.0.0.1:{closed_port()}/v1", records=TWO)) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["teacher direct: 0 of 2 records labelled, 2 failed",
                                         "  per record: 0.0 calls, 0 tokens",
                                         f"  predictions: {tmp_path / 'out' / 'predictions.jsonl'}"]
    assert [line for line in captured.err.splitlines() if line.startswith("error:")][0].startswith(
        "error: 2 of 2 records failed (2 connection error")


@pytest.mark.slow
def test_teacher_cli_on_the_embedded_server_ends_with_the_summary(tmp_path, capsys, caplog):
    """The real path: the teacher starts llama.cpp (smollm2-135m) itself, labels two gold sentences, and what
    it prints is the summary, with no HTTP request lines among the logs."""
    caplog.set_level(logging.INFO)
    data, out = tmp_path / "two.jsonl", tmp_path / "out"
    write_records(data, TWO)
    assert main(["run", "--config", "conll04", "--input", str(data), "--method", "direct", "--model",
                 "smollm2-135m", "--out", str(out), "--no-progress", "--max-tokens", "32",
                 "--parse-retries", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "teacher direct: 2 of 2 records labelled, 0 failed"
    assert lines[1].startswith("  NER F1 ") and lines[1].endswith(" (strict) against the gold")
    assert lines[2].startswith("  per record: 1.0 calls, ")  # direct without re-asks: one call a record
    assert lines[3:] == [f"  report: {out / 'report.md'}", f"  predictions: {out / 'predictions.jsonl'}"]
    assert "{" not in (out / "report.md").read_text()
    assert not [r for r in caplog.records if "HTTP Request" in r.getMessage()]


# --- issue 33: one writer per folder, runs that stop, a changed model, a full disk, Ctrl-C ---

def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_a_second_run_on_a_folder_is_refused_naming_the_first_and_a_dead_ones_lock_is_taken_over(tmp_path, capsys,
                                                                                                    caplog):
    import subprocess
    import sys

    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from ie.runlock import RunLock\n"
                               f"with RunLock({str(out)!r}):\n    print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with FaultServer(always(DIRECT_OK)) as server:
            assert main(cli_args(tmp_path, server.url)) == 2
            assert not server.requests
        err = capsys.readouterr().err
        assert f"another run writes here (pid {holder.pid} on " in err and "started 20" in err
    finally:
        holder.kill()  # kill -9: its lock file still names it
        holder.wait()
    with FaultServer(always(DIRECT_OK)) as server:
        assert main(cli_args(tmp_path, server.url)) == 0
    assert f"took over the lock of pid {holder.pid}" in caplog.text
    assert len(read_records(out / "predictions.jsonl")) == 3 and (out / ".lock").read_text() == ""


def test_a_run_whose_answers_never_validate_stops_with_one_line_and_a_fixed_server_labels_all(tmp_path, capsys):
    records = [Record(id=str(i), text=f"Dole met Reagan in Rome {i} .") for i in range(10)]
    args = cli_args(tmp_path, "", "--parse-retries", "0", "--concurrency", "1", records=records)
    with FaultServer(always(Reply("this is not json {"))) as server:
        args[args.index("--endpoint") + 1] = server.url
        assert main(args) == 1
        assert len(server.requests) == 8  # stopped: records 9 and 10 were never sent
        [line] = error_lines(capsys.readouterr().err)
        assert line.startswith("error: run stopped: 8 of 8 answers were no JSON at all (last: "
                               "'this is not json {'): the endpoint likely ignores response_format; try "
                               "--structured-output llguidance")
        assert "10 of 10 records not labelled (10 no valid answer)" in line and "run again: python -m teacher" in line
        failures = (tmp_path / "out" / "failures.jsonl").read_text().splitlines()
        assert len(failures) == 10
        server.script = always(DIRECT_OK)  # fixed: the same command labels every record
        assert main(args) == 0
    assert len(read_records(tmp_path / "out" / "predictions.jsonl")) == 10


def test_a_server_that_never_answers_fails_the_run_quickly(tmp_path, capsys):
    import math
    import time

    with FaultServer(always(Reply(hang_s=math.inf))) as server:
        started = time.perf_counter()
        assert main(cli_args(tmp_path, server.url, "--timeout-first-answer-s", "1")) == 1
        assert time.perf_counter() - started < 10
    [line] = error_lines(capsys.readouterr().err)
    assert "answered no call within 1 s" in line and "3 of 3 records not labelled (3 no answer)" in line


def test_a_resumed_run_refuses_an_endpoint_now_serving_another_model(tmp_path, capsys):
    with FaultServer(always(Reply(DIRECT_OK.content, model="served-7b"))) as server:
        assert main(cli_args(tmp_path, server.url, "--limit", "2")) == 0
        assert json.loads((tmp_path / "out" / "config.json").read_text())["served_model"] == "served-7b"
        assert "Model: served-7b (asked for m; the endpoint answered as served-7b)." in (
            tmp_path / "out" / "report.md").read_text()
        server.script = always(Reply(DIRECT_OK.content, model="served-1b"))  # swapped behind the same name
        assert main(cli_args(tmp_path, server.url)) == 1
    [line] = error_lines(capsys.readouterr().err)
    assert "answers as model 'served-1b', but this folder's labels came from 'served-7b'" in line
    assert len(read_records(tmp_path / "out" / "predictions.jsonl")) == 2


def test_a_full_disk_ends_the_run_with_one_line_the_failures_and_the_resume_command(tmp_path, capsys, monkeypatch):
    import errno

    from ie import failures as failures_module

    writes = []

    def fill_up(path, record):
        if writes:
            raise OSError(errno.ENOSPC, "No space left on device")
        writes.append(record.id)
        append_record(path, record)

    monkeypatch.setattr(failures_module, "append_record", fill_up)
    with FaultServer(always(DIRECT_OK)) as server:
        args = cli_args(tmp_path, server.url, "--concurrency", "1")
        assert main(args) == 1
    [line] = error_lines(capsys.readouterr().err)
    assert line.startswith("error: run stopped: the disk is full:") and "No space left on device" in line
    assert "2 of 3 records not labelled (2 disk full)" in line and "run again: python -m teacher run" in line
    failures = [json.loads(x) for x in (tmp_path / "out" / "failures.jsonl").read_text().splitlines()]
    assert [f["id"] for f in failures] == ["b", "c"]
    assert [r.id for r in read_records(tmp_path / "out" / "predictions.jsonl")] == ["a"]


def test_ctrl_c_prints_one_line_with_the_resume_command(tmp_path, capsys, monkeypatch):
    from teacher import runner

    def interrupted(cfg):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)
    assert main(cli_args(tmp_path, "http://127.0.0.1:1/v1")) == 130
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "to resume, run again: python -m teacher run --config conll04" in err


def test_sigterm_stops_a_run_as_ctrl_c_does_with_one_line_and_exit_143(tmp_path):
    import math
    import sys

    from fault_server import sigterm_once_asked

    with FaultServer(first(1, DIRECT_OK, then=Reply(hang_s=math.inf))) as server:
        command = [sys.executable, "-m", "teacher", *cli_args(tmp_path, server.url, "--concurrency", "1", records=TWO)]
        code, err = sigterm_once_asked(command, server, requests=2)  # the first record done, the second asked
    assert code == 143, err
    assert "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("terminated (SIGTERM): the finished records are kept; to resume, run again: python -m "
                           "teacher run --config conll04")
    assert [r.id for r in read_records(tmp_path / "out" / "predictions.jsonl")] == [TWO[0].id]


def test_a_damaged_call_cache_is_set_aside_and_the_run_goes_on(tmp_path, capsys, caplog):
    out = tmp_path / "out"
    out.mkdir()
    (out / "calls.sqlite").write_bytes(b"not a database at all" * 100)
    with FaultServer(always(DIRECT_OK)) as server:
        assert main(cli_args(tmp_path, server.url)) == 0
    assert len(list(out.glob("calls.sqlite.damaged-*"))) == 1
    assert [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()][0].count("\n") == 0
    assert len(read_records(out / "predictions.jsonl")) == 3
