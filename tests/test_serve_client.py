import json
import socket
from dataclasses import replace

import pytest

from ie.config import load_config, resolve_config_path
from ie.failures import IncompleteRun, failure_of
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport
from ie.llm.types import SamplingParams, TransportError
from ie.records import read_labelled
from ie.schema import Record, write_records
from ie.student_format import answer_model, build_messages, mention_rules
from serve.client import StudentExtractor, extract, main
from tests.teacher_script import GOLD as TEACHER_GOLD

DATASET = load_config(resolve_config_path("conll04"))
SCHEMA = DATASET.task_schema
TEXT = "Lee Harvey Oswald shot John F. Kennedy in Dallas ."
GOOD = json.dumps({
    "entities": [["Lee Harvey Oswald", "Peop"], ["John F. Kennedy", "Peop"], [" Dallas", "Loc"], ["Houston", "Loc"]],
    "relations": [["Lee Harvey Oswald", "Kill", "John F. Kennedy"]],
})


def extractor(script) -> tuple[StudentExtractor, ScriptedTransport]:
    transport = ScriptedTransport(script)
    return StudentExtractor(LLMClient([transport], backoff_s=0.0), SCHEMA), transport


async def test_extract_grounds_spans_and_reports_stats():
    ex, transport = extractor(lambda req: GOOD)
    (rec,) = await ex.extract_batch([TEXT])
    assert rec.id == "0" and rec.text == TEXT
    assert [(e.text, e.type, e.start) for e in rec.entities] == [
        ("Lee Harvey Oswald", "Peop", 0), ("John F. Kennedy", "Peop", 23), ("Dallas", "Loc", 42)]
    assert [(rec.entities[r.head].text, r.type, rec.entities[r.tail].text) for r in rec.relations] == [
        ("Lee Harvey Oswald", "Kill", "John F. Kennedy")]
    stats = rec.stats
    assert stats.calls == 1 and stats.failed_calls == 0 and stats.ungrounded == 1
    assert stats.error is None
    request = transport.requests[0]
    assert request.messages == build_messages(TEXT, SCHEMA)
    assert request.response_format["type"] == "json_schema"
    assert "Peop" in json.dumps(request.response_format["json_schema"]["schema"])


async def test_the_grammar_closes_the_lists_at_the_datasets_caps():
    """What ends a student that repeats items: the llguidance grammar (the embedded llama.cpp path) lets a list
    hold at most the config's `mentions:` caps, mentions at most `max_chars`, so the JSON must close."""
    transport = ScriptedTransport(lambda req: GOOD)
    client = LLMClient([transport], backoff_s=0.0, structured_output="llguidance")
    await StudentExtractor(client, SCHEMA, rules=mention_rules(DATASET)).extract_batch([TEXT])
    wire = json.loads(transport.requests[0].grammar.split("%json ", 1)[1])
    # the separators the student is trained on (build_messages' format, render_answer's answers): no spaces
    assert (wire["x-guidance"]["item_separator"], wire["x-guidance"]["key_separator"]) == (",", ":")
    profile = DATASET.mentions
    assert wire["properties"]["entities"]["maxItems"] == profile.items_per_sentence == 10
    assert wire["properties"]["relations"]["maxItems"] == profile.relations_per_sentence == 5
    mention, _ = wire["properties"]["entities"]["items"]["prefixItems"]
    assert mention["maxLength"] == profile.max_chars == 40


async def test_an_answer_cut_off_at_the_token_limit_keeps_its_items_and_is_counted():
    from ie.llm.types import ChatResponse, Choice

    cut = GOOD[:GOOD.index('[" Dallas"') + 4]  # the two people, then the token limit inside the third item
    ex, _ = extractor(lambda req: ChatResponse([Choice(cut, finish_reason="length")], 300, 384))
    (rec,) = await ex.extract_batch([TEXT])
    stats = rec.stats
    assert stats.truncated_calls == 1 and stats.failed_calls == 0 and stats.calls == 1
    assert [e.text for e in rec.entities] == ["Lee Harvey Oswald", "John F. Kennedy"]
    (whole,) = await extractor(lambda req: GOOD)[0].extract_batch([TEXT])
    assert whole.stats.truncated_calls == 0


async def test_invalid_answer_is_reasked_then_salvaged_from_its_json():
    bad = json.dumps({"entities": [["Dallas", "Loc"], ["Kennedy", "PERSON"]], "relations": []})
    ex, transport = extractor(lambda req: bad)
    inputs = [Record(id="a", text=TEXT, meta={"k": 1}), Record(id="b", text="Nothing here .")]
    recs = await ex.extract_batch(inputs)
    assert [r.id for r in recs] == ["a", "b"]
    stats = recs[0].stats
    assert stats.failed_calls == 1 and stats.calls == 3 and "invalid answer" in stats.error
    # what the raw answer still held is salvaged: the valid entity, grounded; the unknown type counted
    assert [(e.text, e.type) for e in recs[0].entities] == [("Dallas", "Loc")]
    assert stats.invalid == 1
    assert len(transport.requests) == 6


async def test_an_answer_holding_no_json_fails_its_record_with_the_raw_text():
    ex, transport = extractor(lambda req: "this is not json {")
    (rec,) = await ex.extract_batch([TEXT])
    assert failure_of(rec) == "no valid answer" and not rec.entities and len(transport.requests) == 3
    error = rec.stats.error
    assert error.startswith("invalid answer after 3 attempts") and "last answer: 'this is not json {'" in error


async def test_transport_failure_marks_the_record_unfinished_not_empty():
    ex, _ = extractor(lambda req: TransportError("HTTP 400: bad request", retryable=False, status=400))
    (rec,) = await ex.extract_batch(["Some text ."])
    stats = rec.stats
    assert failure_of(rec) == "HTTP 400" and stats.error == "HTTP 400: bad request"
    assert set(stats.as_dict()) == {"failed", "error", "wall_s"}


async def test_a_record_past_its_time_budget_is_unfinished():
    import asyncio

    class Hanging(ScriptedTransport):
        async def __call__(self, request):
            await asyncio.sleep(30)

    ex = StudentExtractor(LLMClient([Hanging(lambda r: GOOD)]), SCHEMA, budget_s=0.1)
    (rec,) = await ex.extract_batch([TEXT])
    assert failure_of(rec) == "time budget"


LONG_TEXT = ("Lee Harvey Oswald shot John F. Kennedy in Dallas , and two days later , in the basement of the police "
             "headquarters of that city , the night club owner Jack Ruby shot Oswald dead .")


async def test_the_time_budget_is_the_records_not_each_calls():
    """Each call answers within the budget; the long text's whole call and its halves together do not."""
    import asyncio

    class Slow(ScriptedTransport):
        async def __call__(self, request):
            response = await super().__call__(request)
            await asyncio.sleep(0.3)
            return response

    transport = Slow(lambda r: GOOD)
    ex = StudentExtractor(LLMClient([transport]), SCHEMA, budget_s=0.5, halves_from_tokens=1)
    (rec,) = await ex.extract_batch([LONG_TEXT])
    assert failure_of(rec) == "time budget" and not rec.entities
    assert len(transport.requests) == 3  # the whole text answered in time, then the halves ran it over


def answer_by_text(answers: dict[str, str]):
    """A student that answers each text (a whole text or a half) as scripted, empty lists otherwise."""
    def answer(req):
        text = req.messages[-1]["content"].split("<text>\n", 1)[1].rsplit("\n</text>", 1)[0]
        return answers.get(text, '{"entities":[],"relations":[]}')
    return answer


async def test_a_second_look_in_halves_adds_what_the_whole_answer_missed():
    from ie.windows import estimate_tokens, split_halves

    first, second = (h.record.text for h in split_halves(Record(id="x", text=LONG_TEXT)))
    transport = ScriptedTransport(answer_by_text({
        LONG_TEXT: GOOD,
        first: json.dumps({"entities": [["Oswald", "Peop"], ["Dallas", "Org"]], "relations": []}),
        second: json.dumps({"entities": [["Jack Ruby", "Peop"], ["Oswald", "Peop"]],
                            "relations": [["Jack Ruby", "Kill", "Oswald"]]})}))
    ex = StudentExtractor(LLMClient([transport], backoff_s=0.0), SCHEMA, rules=mention_rules(DATASET),
                          halves_from_tokens=estimate_tokens(LONG_TEXT))
    long, short = await ex.extract_batch([LONG_TEXT, TEXT])
    assert len(transport.requests) == 4  # the long text whole and in halves; the short one whole
    assert [(e.text, e.type) for e in long.entities] == [
        ("Lee Harvey Oswald", "Peop"), ("John F. Kennedy", "Peop"), ("Dallas", "Loc"), ("Jack Ruby", "Peop"),
        ("Oswald", "Peop")]  # the halves' "Dallas" as Org lost to the whole answer's Loc
    assert [(long.entities[r.head].text, r.type, long.entities[r.tail].text) for r in long.relations] == [
        ("Lee Harvey Oswald", "Kill", "John F. Kennedy"), ("Jack Ruby", "Kill", "Oswald")]
    assert long.stats.calls == 3 and long.stats.windows == 2 and len(long.windows) == 2
    assert short.stats.calls == 1 and short.windows is None and short.stats.windows is None
    (tiny,) = await StudentExtractor(LLMClient([transport], backoff_s=0.0), SCHEMA,
                                     halves_from_tokens=1).extract_batch(["Hi ."])
    assert tiny.stats.calls == 1 and tiny.windows is None  # too short to halve: asked once


async def test_a_half_that_fails_leaves_the_record_unfinished():
    from ie.windows import split_halves

    first, _ = (h.record.text for h in split_halves(Record(id="x", text=LONG_TEXT)))

    def answer(req):
        if first in req.messages[-1]["content"] and LONG_TEXT not in req.messages[-1]["content"]:
            return TransportError("HTTP 400: bad request", retryable=False, status=400)
        return GOOD

    ex = StudentExtractor(LLMClient([ScriptedTransport(answer)], backoff_s=0.0), SCHEMA, halves_from_tokens=1)
    (rec,) = await ex.extract_batch([LONG_TEXT])
    assert failure_of(rec) == "HTTP 400" and not rec.entities


def test_the_cli_takes_the_second_look_from_the_config_unless_the_flag_says_otherwise(tmp_path):
    assert DATASET.serve.halves_from_tokens  # CoNLL04 sets one
    write_records(tmp_path / "in.jsonl", [Record(id="long", text=LONG_TEXT * 2)])
    with FaultServer(always(VALID)) as server:
        args = ["--endpoint", server.url, "--model", "m", "--input", str(tmp_path / "in.jsonl"), "--config",
                "conll04", "--out", str(tmp_path / "out.jsonl"), "--no-cache"]
        assert main(args) == 0 and len(server.requests) == 3
        assert main([*args, "--halves-from-tokens", "0"]) == 0 and len(server.requests) == 4
        (rec,) = read_labelled(tmp_path / "out.jsonl")
        assert rec.windows is None and rec.stats.calls == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_cli_end_to_end_against_embedded_smollm(tmp_path):
    from ie.llm.local import LocalServer

    port = _free_port()
    inputs = [Record(id="s1", text="John Smith lives in Boston ."), Record(id="s2", text="IBM is in Armonk .")]
    write_records(tmp_path / "in.jsonl", inputs)
    with LocalServer("smollm2-135m", n_parallel=2, port=port) as server:
        assert server.base_url == f"http://127.0.0.1:{port}/v1"
        out = tmp_path / "out.jsonl"
        assert main(["--endpoint", server.base_url, "--model", server.model_name, "--input",
                     str(tmp_path / "in.jsonl"), "--config", "conll04", "--out", str(out),
                     "--max-tokens", "128", "--concurrency", "2", "--max-reasks", "0"]) == 0
        one = extract("Ann lives in Rome .", endpoint=server.base_url, model=server.model_name, config="conll04",
                      max_reasks=0, params=SamplingParams(max_tokens=96))
        # 8 tokens cannot hold even empty lists: the answer is cut off, counted, and still a valid record
        cut = extract("Ann lives in Rome .", endpoint=server.base_url, model=server.model_name, config="conll04",
                      max_reasks=0, params=SamplingParams(max_tokens=8))
    assert isinstance(one, Record) and one.id == "0" and one.stats.calls == 1
    assert cut.stats.truncated_calls == 1 and cut.stats.failed_calls == 0
    recs = read_labelled(out)  # validates offsets and entity texts
    assert [r.id for r in recs] == ["s1", "s2"]
    for r in recs:
        assert all(e.type in SCHEMA.entity_types for e in r.entities)
        assert all(r.text[e.start:e.end] == e.text for e in r.entities)
        assert r.stats.calls == 1  # --max-reasks 0: one call a record, valid or not
    run = json.loads(out.with_suffix(".run.json").read_text())
    assert run["records"] == 2 and run["totals"]["calls"] == 2
    assert set(run["totals"]) == {"calls", "prompt_tokens", "completion_tokens", "failed_calls", "truncated_calls",
                                  "ungrounded", "invalid"}


@pytest.mark.slow
async def test_the_student_path_writes_compact_json_on_the_real_server(endpoint):
    """What the bench runs for the student: its prompt and answer model on the embedded llama.cpp server under
    the llguidance grammar. The answer comes back without spaces and without argument types (CoNLL04's relation
    types fix them), as the student is trained to write it, and the extractor grounds it into a record."""
    client = LLMClient.from_endpoints([replace(endpoint, structured_output="llguidance")], max_parse_retries=0)
    params = SamplingParams(temperature=0.0, seed=0, max_tokens=160)
    try:
        [answer] = await client.structured(build_messages(TEXT, SCHEMA), answer_model(SCHEMA, DATASET.mentions),
                                           params)
        [record] = await StudentExtractor(client, SCHEMA, params, rules=mention_rules(DATASET)).extract_batch([TEXT])
    finally:
        await client.aclose()
    assert answer.raw.startswith('{"entities":[') and '", "' not in answer.raw and '": "' not in answer.raw
    assert all(len(item) == 2 for item in json.loads(answer.raw)["entities"])  # [text, type]
    assert all(len(item) == 3 for item in json.loads(answer.raw).get("relations", []))  # no argument types
    stats = record.stats
    assert stats.calls == 1 and stats.failed_calls == 0
    assert all(record.text[e.start:e.end] == e.text for e in record.entities)


@pytest.mark.slow
async def test_a_second_look_on_the_real_server_keeps_the_whole_answer_and_grounds_what_it_adds(endpoint, tmp_path):
    client = LLMClient.from_endpoints([replace(endpoint, structured_output="llguidance")], max_parse_retries=0,
                                      cache_path=tmp_path / "calls.sqlite")  # the same whole answer twice
    params = SamplingParams(temperature=0.0, seed=0, max_tokens=160)
    try:
        [looked] = await StudentExtractor(client, SCHEMA, params, rules=mention_rules(DATASET),
                                          halves_from_tokens=1).extract_batch([LONG_TEXT])
        [whole] = await StudentExtractor(client, SCHEMA, params, rules=mention_rules(DATASET)).extract_batch([LONG_TEXT])
    finally:
        await client.aclose()
    assert looked.stats.calls == 3 and looked.stats.failed_calls == 0 and looked.stats.windows == 2
    assert whole.stats.calls == 1 and whole.stats.cached
    assert {e.key for e in whole.entities} <= {e.key for e in looked.entities}
    assert all(looked.text[e.start:e.end] == e.text for e in looked.entities)


async def test_record_wall_time_is_service_time_not_queueing():
    """Records beyond the concurrency limit wait outside the timer: a queue of six one-at-a-time requests
    gives six records of about one request's time each, not 1x..6x."""
    import asyncio

    class SlowTransport(ScriptedTransport):
        async def __call__(self, request):
            await asyncio.sleep(0.2)  # long beside a loaded machine's overhead (0.2 s seen on 2 busy cores)
            return await super().__call__(request)

    transport = SlowTransport(lambda req: GOOD)
    ex = StudentExtractor(LLMClient([transport], concurrency=1), SCHEMA, concurrency=1)
    recs = await ex.extract_batch([TEXT] * 6)
    walls = [r.stats.wall_s for r in recs]
    assert len(transport.requests) == 6 and max(walls) < 0.6, walls  # queued, the last would take 1.2 s


# --- the CLI against a fault-injecting server on 127.0.0.1 ---

from fault_server import FaultServer, Reply, always, closed_port

VALID = Reply(json.dumps({"entities": [["Dallas", "Loc"]], "relations": []}))


def cli_args(tmp_path, url, *extra):
    write_records(tmp_path / "in.jsonl", [Record(id="s1", text=TEXT), Record(id="s2", text="IBM is in Armonk .")])
    return ["--endpoint", url, "--model", "m", "--input", str(tmp_path / "in.jsonl"), "--config", "conll04",
            "--out", str(tmp_path / "out.jsonl"), "--retries", "0", *extra]


def test_cli_leaves_failed_records_out_exits_1_and_a_rerun_labels_them(tmp_path, capsys):
    port = closed_port()
    args = cli_args(tmp_path, f"http://127.0.0.1:{port}/v1")
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "2 of 2 records failed (2 connection error" in err
    assert "python -m serve.client --endpoint" in err
    assert read_labelled(tmp_path / "out.jsonl") == []
    failures = [json.loads(x) for x in (tmp_path / "out.failures.jsonl").read_text().splitlines()]
    assert [f["id"] for f in failures] == ["s1", "s2"]
    with FaultServer(always(VALID), port=port) as server:
        assert main(args) == 0
    assert len(server.requests) == 2 and not (tmp_path / "out.failures.jsonl").exists()
    assert [r.id for r in read_labelled(tmp_path / "out.jsonl")] == ["s1", "s2"]


def test_cli_redacts_an_echoed_key_and_library_extract_raises(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("STUDENT_KEY", "sk-student-0123456789")
    with FaultServer(always(Reply(status=401, message="unknown key {key}"))) as server:
        assert main(cli_args(tmp_path, server.url, "--api-key-env", "STUDENT_KEY")) == 1
        with pytest.raises(IncompleteRun, match=r"1 of 1 records failed \(1 HTTP 401"):
            extract("Ann lives in Rome .", endpoint=server.url, model="m", config="conll04",
                    api_key_env="STUDENT_KEY")
    err = capsys.readouterr().err
    written = (tmp_path / "out.failures.jsonl").read_text() + (tmp_path / "out.run.json").read_text()
    assert "unknown key [redacted]" in err and "sk-student" not in err + written


def test_cli_read_timeout_flags_and_input_errors(tmp_path, capsys):
    with FaultServer(always(Reply(hang_s=30))) as server:
        assert main(cli_args(tmp_path, server.url, "--timeout-first-token-s", "0.2",
                             "--timeout-tokens-per-s", "10000")) == 1
    assert "2 read timeout" in capsys.readouterr().err
    (tmp_path / "empty.txt").write_text("\n")
    assert main(["--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--input", str(tmp_path / "empty.txt"),
                 "--config", "conll04", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "no records to label" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(cli_args(tmp_path, "http://127.0.0.1:1/v1", "--max-token", "5"))
    assert "unrecognized arguments: --max-token" in capsys.readouterr().err


def test_library_extract_needs_the_dataset_config():
    with pytest.raises(TypeError, match="config"):
        extract("Ann lives in Rome .", endpoint="http://127.0.0.1:9/v1", model="m")  # type: ignore[call-arg]


def test_student_client_summary_scores_against_the_input_s_labels(tmp_path, capsys):
    data, out = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    write_records(data, TEACHER_GOLD[:2])
    answer = json.dumps({"entities": [["NASA", "Org"], ["Houston", "Loc"]],
                         "relations": [["NASA", "OrgBased_In", "Houston"]]})
    with FaultServer(lambda body: Reply(answer)) as server:
        assert main(["--endpoint", server.url, "--model", "m", "--input", str(data), "--config", "conll04",
                     "--out", str(out), "--retries", "0"]) == 0
    # record a: its text has neither name, so nothing is grounded; record b: both entities and the relation right
    # NER P 2/2, R 2/5 -> F1 57.1; RE P 1/1, R 1/1 -> F1 100
    assert capsys.readouterr().out.splitlines() == [
        "student: 2 of 2 records labelled, 0 failed",
        "  NER F1 57.1, RE F1 100.0 (strict) against the gold",
        "  per record: 1.0 calls, 15 tokens",
        f"  records: {out}",
        f"  run: {out.with_suffix('.run.json')}",
        f"  viewer: {out.with_suffix('.html')}"]
    assert 'Houston' in out.with_suffix('.html').read_text()  # the viewer of the run, beside it


def test_a_concurrency_of_zero_is_refused_not_left_waiting():
    with pytest.raises(ValueError, match="concurrency: must be at least 1, got 0"):
        StudentExtractor(LLMClient([ScriptedTransport(lambda req: GOOD)]), SCHEMA, concurrency=0)


# --- issue 33: written as it goes, cached, bounded, one writer, one line when stopped or interrupted ---

def test_cli_writes_each_record_as_it_finishes_and_caches_by_default(tmp_path):
    seen_while_running = []

    def script(body):
        if "Armonk" in body["messages"][-1]["content"]:
            seen_while_running.append((tmp_path / "out.jsonl").read_text())
        return VALID

    with FaultServer(script) as server:
        assert main(cli_args(tmp_path, server.url, "--concurrency", "1")) == 0
        assert [json.loads(x)["id"] for x in seen_while_running[0].splitlines()] == ["s1"]
        assert main(cli_args(tmp_path, server.url)) == 0
        assert len(server.requests) == 2  # the re-run's calls came from <out>.calls.sqlite
    assert (tmp_path / "out.calls.sqlite").exists()
    assert [r.id for r in read_labelled(tmp_path / "out.jsonl")] == ["s1", "s2"]


def test_a_record_budget_is_on_by_default():
    import inspect

    from serve.client import RECORD_BUDGET_S, build_parser, extract_async

    assert 0 < RECORD_BUDGET_S <= 600
    assert build_parser().get_default("timeout_record_s") == RECORD_BUDGET_S
    assert inspect.signature(extract_async).parameters["budget_s"].default == RECORD_BUDGET_S
    assert inspect.signature(StudentExtractor).parameters["budget_s"].default == RECORD_BUDGET_S


def test_cli_against_a_server_that_never_answers_stops_with_one_line(tmp_path, capsys):
    import math

    with FaultServer(always(Reply(hang_s=math.inf))) as server:
        assert main(cli_args(tmp_path, server.url, "--timeout-first-answer-s", "0.5")) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "run stopped: " in err and "answered no call within 0.5 s" in err
    assert "2 of 2 records not labelled (2 no answer)" in err and "run again: python -m serve.client" in err
    assert [json.loads(x)["id"] for x in (tmp_path / "out.failures.jsonl").read_text().splitlines()] == ["s1", "s2"]


def test_cli_refuses_a_second_writer_and_says_how_to_go_on_after_ctrl_c(tmp_path, capsys, monkeypatch):
    from ie.runlock import RunLock
    from serve import client as client_module

    out = tmp_path / "out.jsonl"
    with RunLock(out, tmp_path / ".out.jsonl.lock"):
        assert main(cli_args(tmp_path, "http://127.0.0.1:1/v1")) == 2
    assert f"{out}: another run writes here (pid " in capsys.readouterr().err

    async def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(client_module, "extract_async", interrupted)
    assert main(cli_args(tmp_path, "http://127.0.0.1:1/v1")) == 130
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "to resume, run again: python -m serve.client --endpoint" in err


async def test_a_batch_item_that_is_no_text_is_refused_naming_its_position():
    ex, transport = extractor(lambda req: GOOD)
    with pytest.raises(TypeError, match=r"texts\[1\]: expected a text \(str\) or an ie.schema.Record, got NoneType"):
        await ex.extract_batch(["Ann lives in Rome .", None])
    assert not transport.requests
