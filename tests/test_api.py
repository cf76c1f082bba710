"""The Python API (`crossagentie.extract` / `extract_batch`): teacher methods and the student against a scripted
OpenAI-compatible server on 127.0.0.1, settings passed through and checked, no default schema."""
import asyncio
import json

import pytest
from fault_server import FaultServer, Reply, always, closed_port

import crossagentie
from ie.config import ConfigError, TaskSchema
from ie.schema import Record

NAMES = ("Dole", "Reagan", "Rome", "NASA", "Houston")
SCHEMA = {"entity_types": {"Peop": {"description": "a person"}, "Loc": {"description": "a place"}}}
STUDENT = Reply(json.dumps({"entities": [["NASA", "Org"], ["Houston", "Loc"]],
                            "relations": [["NASA", "OrgBased_In", "Houston"]]}))


def every_name_a_location(body: dict) -> Reply:
    """The direct method's answer: each name of the prompt's text, typed Loc."""
    text = body["messages"][-1]["content"].split("<text>")[-1]
    return Reply(json.dumps({"entities": [{"text": n, "type": "Loc", "confidence": 0.8} for n in NAMES
                                          if f"{n} " in text]}))


def test_a_teacher_method_labels_a_batch_in_order_with_grounded_offsets():
    texts = ["Dole met Reagan in Rome .", "NASA is in Houston ."]
    with FaultServer(every_name_a_location) as server:
        records = crossagentie.extract_batch(texts, schema=SCHEMA, method="direct", endpoint=server.url,
                                             model_name="m", max_tokens=77, retries=0)
    assert [r.id for r in records] == ["0", "1"] and [r.text for r in records] == texts
    assert [(e.start, e.end, e.type, e.text) for e in records[1].entities] == [
        (0, 4, "Loc", "NASA"), (11, 18, "Loc", "Houston")]
    assert all(r.debate and r.confidence is not None and r.stats.calls for r in records)
    assert len(server.requests) == 2 and {b["model"] for b in server.requests} == {"m"}
    assert {b["max_tokens"] for b in server.requests} == {154}  # the setting reached the teacher (direct: 2x)


def test_extract_is_one_text_of_the_batch_and_takes_a_config_name():
    with FaultServer(every_name_a_location) as server:
        record = crossagentie.extract("NASA is in Houston .", schema="conll04", method="direct",
                                      endpoint=server.url, model_name="m", retries=0)
    assert isinstance(record, Record) and record.id == "0"
    assert [(e.text, e.type) for e in record.entities] == [("NASA", "Loc"), ("Houston", "Loc")]
    with pytest.raises(TypeError, match="extract takes one text"):
        crossagentie.extract(["NASA is in Houston ."], schema="conll04")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="extract_batch takes a list of texts"):
        crossagentie.extract_batch("NASA is in Houston .", schema="conll04")


def test_the_student_labels_with_the_schemas_relations():
    with FaultServer(always(STUDENT)) as server:
        record = crossagentie.extract("NASA is in Houston .", schema="conll04", method="student",
                                      endpoint=server.url, model_name="student", retries=0, max_reasks=0)
    assert [(e.start, e.end, e.type) for e in record.entities] == [(0, 4, "Org"), (11, 18, "Loc")]
    assert [(r.head, r.type, r.tail) for r in record.relations] == [(0, "OrgBased_In", 1)]
    assert record.stats.calls == 1 and record.debate is None
    assert server.requests[0]["model"] == "student"
    assert server.requests[0]["response_format"]["type"] == "json_schema"


def test_the_student_takes_the_schemas_second_look_at_long_texts_unless_told_otherwise():
    long = "NASA is in Houston , " * 30 + "."
    with FaultServer(always(STUDENT)) as server:
        looked = crossagentie.extract(long, schema="conll04", method="student", endpoint=server.url,
                                      model_name="student", retries=0, max_reasks=0)
        whole = crossagentie.extract(long, schema="conll04", method="student", endpoint=server.url,
                                     model_name="student", retries=0, max_reasks=0, halves_from_tokens=None)
    assert looked.stats.calls == 3 and looked.stats.windows == 2  # CoNLL04's serve.halves_from_tokens
    assert whole.stats.calls == 1 and whole.windows is None


async def test_the_async_variant_runs_inside_an_event_loop():
    with FaultServer(every_name_a_location) as server:
        records = await crossagentie.extract_batch_async(["Dole met Reagan in Rome ."], schema=TaskSchema(**SCHEMA),
                                                         method="direct", endpoint=server.url, model_name="m")
    assert [e.text for e in records[0].entities] == ["Dole", "Reagan", "Rome"]
    assert asyncio.get_running_loop().is_running()


def test_unfinished_records_raise_and_are_never_returned():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    for method in ("direct", "student"):
        with pytest.raises(crossagentie.IncompleteRun, match=r"2 of 2 records failed \(2 connection error"):
            crossagentie.extract_batch(["a .", "b ."], schema="conll04", method=method, endpoint=url,
                                       model_name="m", retries=0)


@pytest.mark.parametrize("method, setting", [("direct", "max_reasks"), ("crossagentie", "max_round"),
                                             ("student", "max_rounds"), ("direct", "split")])
def test_an_unknown_setting_is_refused_naming_it_before_any_call(method, setting):
    with FaultServer(always(STUDENT)) as server:
        with pytest.raises(TypeError, match=rf"unknown setting '{setting}' for method '{method}'; its settings: "):
            crossagentie.extract("x .", schema="conll04", method=method, endpoint=server.url, model_name="m",
                                 **{setting: 1})
    assert server.requests == []


def test_there_is_no_default_schema():
    with pytest.raises(TypeError, match="schema"):
        crossagentie.extract("NASA is in Houston .")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="schema: give a config name or path"):
        crossagentie.extract_batch(["x ."], schema=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="nope: no such config file"):
        crossagentie.extract_batch(["x ."], schema="nope")


def test_an_item_that_is_no_text_is_refused_naming_its_position_before_a_server_starts():
    with pytest.raises(TypeError, match=r"texts\[0\]: expected a text \(str\) or an ie.schema.Record, got NoneType"):
        crossagentie.extract_batch([None], schema=SCHEMA, method="direct")  # no endpoint: nothing started


def test_bad_combinations_are_refused_before_a_server_starts():
    with pytest.raises(ConfigError, match="unknown method 'debate'"):
        crossagentie.extract("x .", schema=SCHEMA, method="debate")
    with pytest.raises(ConfigError, match="adapter: only method 'student'"):
        crossagentie.extract("x .", schema=SCHEMA, method="direct", adapter="a.gguf")
    with pytest.raises(ConfigError, match="method 'student' needs endpoint=URL"):
        crossagentie.extract("x .", schema=SCHEMA, method="student")
    for method in ("student", "direct"):  # a concurrency of 0 would wait forever
        with pytest.raises(ConfigError, match="concurrency: must be at least 1, got 0"):
            crossagentie.extract("x .", schema=SCHEMA, method=method, endpoint="http://127.0.0.1:9/v1",
                                 model_name="m", concurrency=0)
    with pytest.raises(ConfigError, match="model_name: --endpoint needs --model-name"):
        crossagentie.extract("x .", schema=SCHEMA, method="direct", endpoint="http://127.0.0.1:9/v1")


@pytest.mark.slow
def test_a_teacher_method_labels_through_the_api_on_the_real_embedded_model(endpoint):
    texts = ["Ronald Reagan lives in Washington .", "NASA is based in Houston ."]
    records = crossagentie.extract_batch(texts, schema="conll04", method="direct", endpoint=endpoint.url,
                                         model_name=endpoint.model, max_tokens=64)
    assert [r.text for r in records] == texts
    for record in records:
        assert record.debate.method == "direct" and record.stats.failed_calls == 0
        assert all(record.text[e.start:e.end] == e.text for e in record.entities)

