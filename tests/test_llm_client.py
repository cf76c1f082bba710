"""The client above the wire (`ie.llm.client`): validation, re-asking, retries across endpoints, the call cache,
accounting; then the real SDK against a fault-injecting server, and (slow) the embedded one."""
import asyncio
import sqlite3

import pytest
from fault_server import FaultServer, Reply, always, closed_port
from pydantic import BaseModel

from ie.llm.cache import CallCache
from ie.llm.client import Endpoint, LLMClient, Timeouts
from ie.llm.fake import ScriptedTransport, schema_name
from ie.llm.types import SamplingParams, TransportError


class Answer(BaseModel):
    label: str
    confidence: float


def run(coro):
    return asyncio.run(coro)


def test_valid_answer_is_parsed_and_counted():
    t = ScriptedTransport(lambda r: '{"label": "Loc", "confidence": 0.9}')
    client = LLMClient([t])
    [c] = run(client.structured([{"role": "user", "content": "where is Paris"}], Answer))
    assert c.ok and c.value == Answer(label="Loc", confidence=0.9)
    assert c.attempts == 1 and c.usage.calls == 1 and c.usage.completion_tokens == 4
    assert schema_name(t.requests[0]) == "Answer"
    assert t.requests[0].response_format["json_schema"]["schema"]["required"] == ["label", "confidence"]


def test_malformed_answer_is_reasked_with_the_error_then_accepted():
    answers = iter(['{"label": "Loc"', '{"label": "Loc", "confidence": 0.5}'])
    t = ScriptedTransport(lambda r: next(answers))
    [c] = run(LLMClient([t]).structured([{"role": "user", "content": "q"}], Answer))
    assert c.ok and c.attempts == 2 and c.usage.calls == 2
    retry = t.requests[1].messages
    assert retry[-2] == {"role": "assistant", "content": '{"label": "Loc"'}
    assert "not valid JSON" in retry[-1]["content"]


def test_answer_that_never_validates_is_recorded_not_raised():
    t = ScriptedTransport(lambda r: "I think it is a location")
    client = LLMClient([t], max_parse_retries=1)
    [c] = run(client.structured([{"role": "user", "content": "q"}], Answer))
    assert not c.ok and c.raw == "I think it is a location"
    assert "invalid answer after 2 attempts" in c.error
    assert client.failures == 1


def test_retryable_errors_move_to_the_next_endpoint():
    down = ScriptedTransport(lambda r: TransportError("HTTP 503", retryable=True, status=503), name="down")
    up = ScriptedTransport(lambda r: '{"label": "Org", "confidence": 1}', name="up")
    client = LLMClient([down, up], backoff_s=0.0)
    comps = run(client.structured([{"role": "user", "content": "q"}], Answer, n=3))
    assert all(c.ok for c in comps)
    assert len(up.requests) == 3 and len(down.requests) == 3  # each sample tries `down` once, then moves on


def test_non_retryable_error_fails_fast_and_raises():
    t = ScriptedTransport(lambda r: TransportError("HTTP 400: bad", retryable=False, status=400))
    with pytest.raises(TransportError, match="HTTP 400: bad") as info:
        run(LLMClient([t], backoff_s=0.0).structured([{"role": "user", "content": "q"}], Answer))
    assert len(t.requests) == 1 and info.value.reason == "HTTP 400"


def test_no_backoff_sleep_after_the_last_try():
    import time

    t = ScriptedTransport(lambda r: TransportError("HTTP 503", retryable=True, status=503))
    with pytest.raises(TransportError, match=r"HTTP 503 \(after 2 tries\)"):
        run(LLMClient([t], max_retries=1, backoff_s=0.0).structured([{"role": "user", "content": "q"}], Answer))
    assert len(t.requests) == 2
    started = time.perf_counter()
    with pytest.raises(TransportError):  # the only try is the last: no 2.5-7.5 s sleep after it
        run(LLMClient([t], max_retries=0, backoff_s=5.0).structured([{"role": "user", "content": "q"}], Answer))
    assert time.perf_counter() - started < 2.0


def test_samples_use_distinct_seeds():
    t = ScriptedTransport(lambda r: f'{{"label": "{r.params.seed}", "confidence": 1}}')
    comps = run(LLMClient([t]).structured([{"role": "user", "content": "q"}], Answer,
                                          SamplingParams(temperature=0.9, seed=10), n=3))
    assert [c.value.label for c in comps] == ["10", "11", "12"]


def test_cache_makes_a_rerun_free_and_stores_no_key(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_KEY_VAR", "sk-supersecret")
    t = ScriptedTransport(lambda r: '{"label": "Peop", "confidence": 0.7}')
    msgs = [{"role": "user", "content": "who is Reagan"}]
    first = LLMClient([t], cache=CallCache(tmp_path / "c.sqlite"))
    [a] = run(first.structured(msgs, Answer, n=1))
    second = LLMClient([t], cache=CallCache(tmp_path / "c.sqlite"))
    [b] = run(second.structured(msgs, Answer))
    assert len(t.requests) == 1 and b.cached and not a.cached and b.value == a.value
    assert b.usage.cached_calls == 1 and b.usage.prompt_tokens == a.usage.prompt_tokens
    dump = "\n".join(str(row) for row in sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT * FROM calls"))
    assert "sk-supersecret" not in dump
    # A different parameter is a different call.
    run(second.structured(msgs, Answer, SamplingParams(temperature=0.5)))
    assert len(t.requests) == 2


def test_openai_transport_reads_key_from_env_only(monkeypatch):
    pytest.importorskip("openai")
    from ie.llm.client import Endpoint, OpenAITransport

    monkeypatch.setenv("MY_KEY", "sk-test")
    transport = OpenAITransport(Endpoint(url="http://127.0.0.1:9/v1", model="m", api_key_env="MY_KEY"))
    assert "sk-test" not in transport.name and "sk-test" not in repr(transport.endpoint)
    assert transport._sdk.api_key == "sk-test"  # what the SDK sends: read from the variable, held nowhere else


def scripted_server(statuses, bodies):
    """A local HTTP server answering chat completions with the given statuses, recording request bodies."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status = next(statuses)
            payload = {"error": {"message": "slow down"}} if status == 429 else {
                "id": "x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": '{"label": "Loc", "confidence": 0.8}'}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                          "prompt_tokens_details": {"cached_tokens": 5}},
            }
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_http_429_then_success_through_the_real_sdk():
    """The OpenAI SDK path against a scripted HTTP server: a 429 is retried, usage and cached tokens parsed."""
    from ie.llm.client import Endpoint

    bodies = []
    server, url = scripted_server(iter([429, 200]), bodies)
    try:
        client = LLMClient.from_endpoints([Endpoint(url=url, model="m")], backoff_s=0.0)
        [c] = run(client.structured([{"role": "user", "content": "q"}], Answer, SamplingParams(seed=3)))
    finally:
        server.shutdown()
    assert c.ok and c.value.label == "Loc"
    assert c.usage.prompt_tokens == 11 and c.usage.prefix_cached_tokens == 5
    assert c.usage.new_tokens == 11 - 5 + 7  # what the server computed: the uncached prompt and the completion
    assert len(bodies) == 2 and bodies[1]["response_format"]["type"] == "json_schema"
    assert bodies[1]["seed"] == 3 and bodies[1]["model"] == "m"


def test_llguidance_endpoint_sends_a_compact_grammar_instead_of_response_format():
    import json

    from ie.llm.client import Endpoint

    bodies = []
    server, url = scripted_server(iter([200]), bodies)
    try:
        client = LLMClient.from_endpoints([Endpoint(url=url, model="m", structured_output="llguidance")])
        [c] = run(client.structured([{"role": "user", "content": "q"}], Answer))
    finally:
        server.shutdown()
    assert c.ok and "response_format" not in bodies[0]
    head, _, schema = bodies[0]["grammar"].partition("start: %json ")
    assert head == "%llguidance {}\n"
    schema = json.loads(schema)
    assert schema["x-guidance"]["whitespace_flexible"] is False and schema["additionalProperties"] is False
    assert schema["required"] == ["label", "confidence"]
    with pytest.raises(ValueError, match="mix structured outputs"):
        LLMClient.from_endpoints([Endpoint(url=url, model="m"), Endpoint(url=url, model="m",
                                                                        structured_output="llguidance")])
    with pytest.raises(ValueError, match="structured_output must be one of"):
        Endpoint(url=url, model="m", structured_output="gbnf")


def test_cut_off_answer_keeps_its_complete_items_without_a_reask():
    from ie.llm.types import ChatResponse, Choice

    class Items(BaseModel):
        items: list[Answer]

    cut = '{"items": [{"label": "Loc", "confidence": 0.9}, {"label": "Pe'
    t = ScriptedTransport(lambda r: ChatResponse([Choice(cut, finish_reason="length")], 5, 20))
    [c] = run(LLMClient([t]).structured([{"role": "user", "content": "q"}], Items))
    assert c.ok and c.truncated and c.attempts == 1 and c.raw == cut
    assert c.value.items == [Answer(label="Loc", confidence=0.9)]
    # the same text not cut off by the length limit is a malformed answer: re-asked
    t = ScriptedTransport(lambda r: ChatResponse([Choice(cut, finish_reason="stop")], 5, 20))
    [c] = run(LLMClient([t], max_parse_retries=1).structured([{"role": "user", "content": "q"}], Items))
    assert not c.ok and c.attempts == 2 and not c.truncated


def test_a_joint_answer_cut_before_its_second_list_keeps_the_first():
    # One-step answers entities, then relations: cut inside the entities, it has found no relation yet.
    from ie.llm.types import ChatResponse, Choice

    class Joint(BaseModel):
        entities: list[Answer]
        relations: list[Answer]

    cut = '{"entities": [{"label": "Loc", "confidence": 0.9}, {"label": "Pe'
    t = ScriptedTransport(lambda r: ChatResponse([Choice(cut, finish_reason="length")], 5, 20))
    [c] = run(LLMClient([t]).structured([{"role": "user", "content": "q"}], Joint))
    assert c.ok and c.truncated and c.value == Joint(entities=[Answer(label="Loc", confidence=0.9)], relations=[])


def test_wire_schema_drops_grammar_costly_bounds_but_validation_keeps_them():
    from pydantic import Field

    from ie.llm.client import response_format

    class Bounded(BaseModel):
        items: list[str] = Field(max_length=2)
        name: str = Field(max_length=5)

    wire = response_format(Bounded)["json_schema"]["schema"]
    assert "maxItems" not in str(wire) and "maxLength" not in str(wire)
    t = ScriptedTransport(lambda r: '{"items": ["a", "b", "c"], "name": "x"}')
    [c] = run(LLMClient([t], max_parse_retries=0).structured([{"role": "user", "content": "q"}], Bounded))
    assert not c.ok and "items" in c.error


# --- against a fault-injecting HTTP server on 127.0.0.1, through the real SDK ---

ASK = [{"role": "user", "content": "where is Paris"}]
VALID = Reply('{"label": "Loc", "confidence": 0.8}')


def sdk_client(url, **kwargs):
    timeouts = kwargs.pop("timeouts", Timeouts())
    return LLMClient.from_endpoints([Endpoint(url=url, model="m", api_key_env=kwargs.pop("key_env", None),
                                              timeouts=timeouts)], backoff_s=0.0, **kwargs)


def ask(client, **kwargs):
    async def go():
        try:
            return await client.structured(ASK, Answer, **kwargs)
        finally:
            await client.aclose()

    return run(go())


def test_refused_connection_is_retried_then_raised_with_its_reason():
    with pytest.raises(TransportError, match=r"after 3 tries") as info:
        ask(sdk_client(f"http://127.0.0.1:{closed_port()}/v1", max_retries=2))
    assert info.value.reason == "connection error" and info.value.retryable


@pytest.mark.parametrize(("reply", "reason", "tries"), [
    (Reply(status=503, message="overloaded"), "HTTP 5xx", 3),
    (Reply(status=401, message="bad key"), "HTTP 401", 1),
    (Reply(status=400, message="request (3153 tokens) exceeds the available context size (2048 tokens)"),
     "context overflow", 1),
])
def test_http_errors_raise_with_their_reason_and_only_5xx_is_re_sent(reply, reason, tries):
    with FaultServer(always(reply)) as server:
        with pytest.raises(TransportError) as info:
            ask(sdk_client(server.url, max_retries=2))
    assert info.value.reason == reason and len(server.requests) == tries


def test_error_text_echoing_the_key_is_redacted(monkeypatch):
    monkeypatch.setenv("FAULT_KEY", "sk-live-0123456789")
    with FaultServer(always(Reply(status=401, message="invalid key {key} for this model"))) as server:
        with pytest.raises(TransportError) as info:
            ask(sdk_client(server.url, key_env="FAULT_KEY"))
    assert "sk-live-0123456789" not in str(info.value) and "invalid key [redacted]" in str(info.value)


def test_read_timeout_follows_max_tokens_and_is_not_re_sent():
    import time

    assert Timeouts(first_token_s=10, min_tokens_per_s=4).read_s(200) == 60
    with pytest.raises(ValueError, match="timeouts.min_tokens_per_s"):
        Timeouts(min_tokens_per_s=0)
    fast = Timeouts(connect_s=1, first_token_s=0.3, min_tokens_per_s=100)  # 0.3 s + 20 tokens / 100 tok/s
    with FaultServer(always(Reply(hang_s=30))) as server:
        started = time.perf_counter()
        with pytest.raises(TransportError, match="no answer within 0.5 s") as info:
            ask(sdk_client(server.url, timeouts=fast, max_retries=3), params=SamplingParams(max_tokens=20))
        waited = time.perf_counter() - started
    assert info.value.reason == "read timeout" and len(server.requests) == 1 and waited < 10  # the hang: 30 s


def test_invalid_answers_are_not_cached_so_a_fixed_server_is_asked_again(tmp_path):
    cache = tmp_path / "c.sqlite"
    with FaultServer(always(Reply("I think Paris is a city"))) as server:
        [bad] = ask(sdk_client(server.url, cache_path=cache, max_parse_retries=1))
        assert not bad.ok and len(server.requests) == 2
        server.script = always(VALID)  # the server is fixed
        [good] = ask(sdk_client(server.url, cache_path=cache, max_parse_retries=1))
        assert good.ok and not good.cached and len(server.requests) == 3
        [again] = ask(sdk_client(server.url, cache_path=cache))
        assert again.ok and again.cached and len(server.requests) == 3


def test_an_invalid_answer_left_in_an_old_cache_is_not_replayed(tmp_path):
    t = ScriptedTransport(lambda r: '{"label": "Peop", "confidence": 0.7}')
    run(LLMClient([t], cache=CallCache(tmp_path / "c.sqlite")).structured(ASK, Answer))
    db = sqlite3.connect(tmp_path / "c.sqlite")
    db.execute("UPDATE calls SET response = replace(response, 'label', 'lbl')")  # now fails validation
    db.commit()
    [c] = run(LLMClient([t], cache=CallCache(tmp_path / "c.sqlite")).structured(ASK, Answer))
    assert c.ok and not c.cached and len(t.requests) == 2


def test_a_connect_timeout_is_retryable_a_read_timeout_is_not():
    import openai

    from ie.llm.client import OpenAITransport

    try:
        import httpx2 as hx  # the SDK's HTTP client in its newer versions
    except ImportError:
        import httpx as hx
    transport = OpenAITransport(Endpoint(url="http://127.0.0.1:9/v1", model="m"))
    for cause, reason, retryable in ((hx.ConnectTimeout("c"), "connect timeout", True),
                                     (hx.ReadTimeout("r"), "read timeout", False)):
        exc = openai.APITimeoutError(request=hx.Request("POST", "http://127.0.0.1:9/v1"))
        exc.__cause__ = cause
        err = transport._error(exc, 12.0)
        assert (err.reason, err.retryable) == (reason, retryable)


@pytest.mark.slow
def test_the_real_servers_context_overflow_is_a_transport_failure(endpoint):
    """llama.cpp's HTTP 400 for a prompt longer than the context is read as 'context overflow', not re-sent."""
    import asyncio

    from pydantic import BaseModel

    from ie.llm.types import TransportError

    class Answer(BaseModel):
        label: str

    async def ask():
        client = LLMClient.from_endpoints([endpoint], backoff_s=0.0)
        try:
            return await client.structured([{"role": "user", "content": "word " * 3000}], Answer)
        finally:
            await client.aclose()

    with pytest.raises(TransportError) as info:
        asyncio.run(ask())
    assert info.value.reason == "context overflow" and info.value.status == 400 and "after" not in str(info.value)


def test_span_marked_fields_get_the_calls_span_pattern_in_the_llguidance_grammar_only():
    import json

    from pydantic import Field

    from ie.llm.client import SPAN_KEY

    class Mention(BaseModel):
        text: str = Field(json_schema_extra={SPAN_KEY: True})
        evidence: str = ""

    class Mentions(BaseModel):
        items: list[Mention]

    def properties(request):
        schema = (json.loads(request.grammar.partition("start: %json ")[2]) if request.grammar
                  else request.response_format["json_schema"]["schema"])
        return schema["$defs"]["Mention"]["properties"]

    for wire in ("json_schema", "llguidance"):
        t = ScriptedTransport(lambda r: '{"items": [{"text": "Paris"}]}')
        client = LLMClient([t], structured_output=wire)
        run(client.structured(ASK, Mentions, spans="^(?:Paris)$"))
        run(client.structured(ASK, Mentions))
        with_pattern, without = (properties(r) for r in t.requests)
        if wire == "llguidance":
            assert with_pattern["text"]["pattern"] == "^(?:Paris)$" and "pattern" not in with_pattern["evidence"]
        else:  # llama.cpp's GBNF stalls on such a pattern: response_format never carries one
            assert "pattern" not in with_pattern["text"]
        assert "pattern" not in without["text"] and SPAN_KEY not in str(t.requests[0].body())


# --- issue 33: faults a demanding user met (each a flag of tests/fault_server.py) ---

def test_a_trickling_server_cannot_stretch_the_calls_deadline():
    import time

    fast = Timeouts(connect_s=1, first_token_s=1, min_tokens_per_s=100)  # 1 + 1 + 20 / 100 = 2.2 s in all
    with FaultServer(always(Reply(VALID.content, trickle_s=0.2))) as server:  # each byte well inside a read timeout
        started = time.perf_counter()
        with pytest.raises(TransportError, match="no whole answer within 2.2 s") as info:
            ask(sdk_client(server.url, timeouts=fast), params=SamplingParams(max_tokens=20))
    assert info.value.reason == "read timeout" and time.perf_counter() - started < 5


def test_a_server_that_never_answers_stops_the_run_within_the_first_answer_bound():
    import math
    import time

    from ie.llm.types import RunStopped

    assert Timeouts().first_answer_s < 60  # the default: a dead server is found out in well under a minute
    with FaultServer(always(Reply(hang_s=math.inf))) as server:
        started = time.perf_counter()
        with pytest.raises(RunStopped, match="answered no call within 0.5 s") as info:
            ask(sdk_client(server.url, timeouts=Timeouts(first_answer_s=0.5)))
    assert info.value.reason == "no answer" and time.perf_counter() - started < 5


def test_a_slow_call_waits_on_once_the_server_has_answered_another():
    with FaultServer(always(Reply(VALID.content, hang_s=0.6))) as server:
        client = sdk_client(server.url, timeouts=Timeouts(first_answer_s=0.4))

        async def two():
            try:
                first = await client.structured(ASK, Answer, params=SamplingParams(seed=1))
                return first + await client.structured(ASK, Answer, params=SamplingParams(seed=2))
            finally:
                await client.aclose()

        with pytest.raises(Exception, match="answered no call"):  # nothing has come back yet: stop
            run(two())
        server.script = lambda body: Reply(VALID.content, hang_s=0.6 if body["seed"] == 2 else 0)
        client = sdk_client(server.url, timeouts=Timeouts(first_answer_s=0.4))
        assert all(c.ok for c in run(two()))  # the second call's 0.6 s follows an answer: the server is alive


def test_retry_after_is_honoured_up_to_a_cap(monkeypatch):
    from fault_server import first

    from ie.llm import client as client_module

    with FaultServer(first(1, Reply(status=429, message="slow down", retry_after="1.5"), VALID)) as server:
        [c] = ask(sdk_client(server.url))  # backoff_s=0: only the header makes it wait
    assert c.ok and server.times[1] - server.times[0] >= 1.5
    monkeypatch.setattr(client_module, "MAX_RETRY_AFTER_S", 0.5)
    with FaultServer(first(1, Reply(status=503, message="busy", retry_after="20"), VALID)) as server:
        [c] = ask(sdk_client(server.url))
    assert c.ok and 0.5 <= server.times[1] - server.times[0] < 5
    assert client_module.retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0 and client_module.retry_after_s("x") is None


@pytest.mark.parametrize(("body", "says"), [("html", "no JSON chat completion: '<!DOCTYPE html>"),
                                            ("garbage", "no JSON chat completion"),
                                            ("no-choices", "holds no choices"),
                                            ("empty-object", "no chat completion")])
def test_a_200_body_that_is_no_chat_completion_is_one_transport_failure(body, says):
    with FaultServer(always(Reply(body=body))) as server:
        with pytest.raises(TransportError, match=says) as info:
            ask(sdk_client(server.url, max_retries=2))
    assert info.value.reason == "bad response" and len(server.requests) == 1 and "\n" not in str(info.value)


def test_a_key_echoed_in_a_200_answer_is_redacted(monkeypatch):
    monkeypatch.setenv("FAULT_KEY", "sk-live-0123456789")
    with FaultServer(always(Reply('{"label": "{key}", "confidence": 0.5}'))) as server:
        [c] = ask(sdk_client(server.url, key_env="FAULT_KEY"))
    assert c.value.label == "[redacted]" and "sk-live" not in c.raw


def test_another_model_name_is_said_and_recorded_and_stops_a_run_made_with_a_third(caplog):
    from ie.llm.types import RunStopped

    with FaultServer(always(Reply(VALID.content, model="other-model"))) as server:
        client = sdk_client(server.url)
        [c] = ask(client)
        assert c.ok and client.served_model == "other-model"
        assert "answers as model 'other-model', not the 'm' asked for" in caplog.text
        with pytest.raises(RunStopped, match="answers as model 'other-model', but this folder's labels came from 'm'"):
            ask(sdk_client(server.url, served_as="m"))


def test_a_run_whose_answers_mostly_never_validate_stops_naming_the_likely_cause():
    from ie.llm.client import INVALID_STOP_AFTER
    from ie.llm.types import RunStopped

    client = LLMClient([ScriptedTransport(lambda r: "this is not json {")], max_parse_retries=0)
    for _ in range(INVALID_STOP_AFTER - 1):
        [c] = run(client.structured(ASK, Answer))
        assert not c.ok
    with pytest.raises(RunStopped, match="8 of 8 answers were no JSON at all.*ignores response_format; try "
                                         "--structured-output llguidance") as info:
        run(client.structured(ASK, Answer))
    assert info.value.reason == "no valid answer"
