"""Every method end to end on two short CoNLL04 sentences against the embedded smollm2-135m server (one server
for the module). The tiny model extracts little; this checks the real path: schema-constrained answers,
valid grounded records, transcripts, stats, metrics."""
import json

import pytest

from ie.config import load_config, resolve_config_path
from ie.datasets import load_split
from ie.llm.client import Endpoint, LLMClient
from ie.schema import Record, read_records, write_records
from teacher.config import TeacherConfig
from teacher.methods import METHODS
from teacher.runner import run

pytestmark = pytest.mark.slow
FAST = {"max_tokens": 32, "sc_samples": 2, "max_rounds": 1, "cross_task_rounds": 1, "parse_retries": 0,
        "progress": False}


@pytest.fixture(scope="module")
def endpoint():
    from ie.llm.local import LocalServer

    with LocalServer("smollm2-135m", n_parallel=2, n_ctx=1024) as server:
        yield Endpoint(server.base_url, server.model_name)


@pytest.fixture(scope="module")
def sentences(tmp_path_factory):
    dev = load_split(load_config(resolve_config_path("conll04")), "dev")
    short = sorted(dev[:20], key=lambda r: len(r.text))[:2]
    path = tmp_path_factory.mktemp("data") / "two.jsonl"
    write_records(path, short)
    return path


@pytest.mark.parametrize("method", sorted(METHODS))
def test_method_on_the_embedded_server(method, endpoint, sentences, tmp_path):
    cfg = TeacherConfig(input=str(sentences), method=method, out=str(tmp_path / method), **FAST)
    client = LLMClient.from_endpoints([endpoint], concurrency=2, max_parse_retries=0)
    out = run(cfg, client)
    preds = read_records(out / "predictions.jsonl")
    assert len(preds) == 2
    for pred in preds:
        Record.model_validate(pred.model_dump())  # offsets and texts agree
        stats, debate = pred.model_extra["stats"], pred.model_extra["debate"]
        assert stats["calls"] >= 1 and stats["prompt_tokens"] > 0 and "error" not in stats
        assert debate["method"] == method and debate["calls"]
        assert all({"role", "agent", "template", "prompt_tokens"} <= set(c) for c in debate["calls"])
        assert 0.0 <= pred.model_extra["confidence"] <= 1.0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["records"] == 2 and metrics["teacher"]["records"] == 2


def test_likelihood_summarizer_reads_type_word_probabilities_from_the_real_server(endpoint):
    import asyncio

    from teacher.context import RecordContext
    from teacher.likelihood_judge import NOT_ENTITY, span_scores

    schema = load_config(resolve_config_path("conll04")).task_schema
    text = "John Wilkes Booth , who assassinated President Lincoln , was an actor ."
    client = LLMClient.from_endpoints([endpoint])
    ctx = RecordContext(Record(id="r", text=text), schema, client, TeacherConfig(**FAST), "crossagentie")
    scores = asyncio.run(span_scores(ctx, "Lincoln"))
    assert scores is not None and set(scores.probabilities) == {*schema.entity_types, NOT_ENTITY}
    assert sum(scores.probabilities.values()) == pytest.approx(1.0) and 0 < scores.mass <= 1
    [call] = ctx.transcript.calls
    assert call["asked"] == "Lincoln" and call["completion_tokens"] == 1 and "error" not in call
    assert ctx.usage.calls == 1


def test_likelihood_summarizer_retypes_a_label_conflict_to_the_real_model_s_most_probable_type(endpoint):
    import asyncio

    from ie.claims import AgentId, Arg, EntityClaim, Settlement
    from teacher.conflicts import entity_conflicts
    from teacher.context import RecordContext
    from teacher.cross_type_debate import decide
    from teacher.likelihood_judge import NOT_ENTITY, judge, span_scores

    schema = load_config(resolve_config_path("conll04")).task_schema
    text = "John Wilkes Booth , who assassinated President Lincoln , was an actor ."
    ctx = RecordContext(Record(id="r", text=text), schema, LLMClient.from_endpoints([endpoint]),
                        TeacherConfig(**FAST), "crossagentie")
    # The premise: the (pinned, greedy) model finds a type, not "none", for one of these mentions.
    mentions = ("Lincoln", "John Wilkes Booth", "President Lincoln")

    async def score_then_judge():
        for mention in mentions:
            p = (await span_scores(ctx, mention)).probabilities
            top = max((t for t in p if t != NOT_ENTITY), key=p.__getitem__)
            if p[top] > p[NOT_ENTITY]:
                calls = ctx.usage.calls
                start = text.index(mention)
                # Two agents claim the mention, neither with the type the model finds most probable.
                arg = Arg(start, start + len(mention), top, mention)
                claims = [EntityClaim(Arg(arg.start, arg.end, t, mention), AgentId("ner", t), 0.9)
                          for t in schema.entity_types if t != top][:2]
                _, [conflict] = entity_conflicts(claims)
                return arg, p, conflict, await judge(ctx, [conflict]), calls
        pytest.fail(f"the model finds no type for any of {mentions}: {p}")

    arg, p, conflict, verdicts, calls = asyncio.run(score_then_judge())
    assert verdicts[conflict.id].retype == arg.type and verdicts[conflict.id].confidence == pytest.approx(p[arg.type])
    [decision] = decide(conflict, verdicts[conflict.id], Settlement("summarizer"), {})
    assert decision.claim.arg == arg
    assert ctx.usage.calls == calls  # the judge reused the asking above


def test_extent_check_asks_the_real_server_and_keeps_the_span_inside_the_mention(endpoint):
    import asyncio

    from ie.claims import AgentId, Arg, Decision, EntityClaim
    from teacher.context import RecordContext
    from teacher.name_extent import trim_names

    schema = load_config(resolve_config_path("conll04")).task_schema
    text = "Navy Capt. Michael Coats , a shuttle astronaut , said the launch went well ."
    ctx = RecordContext(Record(id="r", text=text), schema, LLMClient.from_endpoints([endpoint]),
                        TeacherConfig(**{**FAST, "extent_check_words": 3}), "crossagentie")
    long, short = Arg(0, 24, "Peop", "Navy Capt. Michael Coats"), Arg(0, 4, "Org", "Navy")
    decisions = [Decision(EntityClaim(a, AgentId("ner", a.type), 0.9), (0.9,)) for a in (long, short)]
    [person, org] = asyncio.run(trim_names(ctx, decisions))
    [call] = ctx.transcript.calls  # "Navy" is one word: not checked
    assert call["role"] == "extent" and call["prompt_tokens"] > 0 and "error" not in call
    [check] = ctx.transcript.extents
    assert check["mention"] == long.text and check["name"] == call["answer"]["name"]
    got = person.claim.arg
    assert long.start <= got.start and got.end <= long.end and text[got.start:got.end] == got.text
    assert check["trimmed_to"] == (got.text if got != long else None) and org.claim.arg == short


def test_crossagentie_as_the_conll04_config_runs_it_on_the_embedded_server(tmp_path):
    # The likelihood Summarizer and no debate round; smollm2's type agents disagree on "Smithsonian" here. Its
    # own server with one slot: in two, concurrent agents share batches, whose arithmetic (and so a 135M
    # model's greedy answer) depends on timing, and the disagreement came and went with the test order.
    from ie.llm.local import LocalServer

    text = tmp_path / "one.txt"
    text.write_text("Smithsonian officials met in Washington .\n")
    cfg = TeacherConfig(input=str(text), out=str(tmp_path / "out"),
                        **{**FAST, "summarizer": "likelihood", "max_rounds": 0})
    with LocalServer("smollm2-135m", n_parallel=1, n_ctx=1024) as server:
        out = run(cfg, LLMClient.from_endpoints([Endpoint(server.base_url, server.model_name)], max_parse_retries=0))
    [pred] = read_records(out / "predictions.jsonl")
    debate = pred.model_extra["debate"]
    judged = [c for c in debate["calls"] if c["agent"] == "summarizer:likelihood"]
    entity_conflicts = [c for c in debate["conflicts"] if c["kind"] != "relation"]
    assert judged and entity_conflicts and not any(c["role"] == "debater" for c in debate["calls"])
    assert all("error" not in c and c["completion_tokens"] == 1 for c in judged)
    assert all(c["settled_by"] == "summarizer" for c in entity_conflicts)
    assert "error" not in pred.model_extra["stats"]


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
    preds = read_records(out / "predictions.jsonl")
    assert len(preds) == 2 and all(p.model_extra["stats"]["calls"] == 1 for p in preds)  # direct, no re-asks
    assert not (out / "failures.jsonl").exists()


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


def test_a_schema_with_no_teacher_section_runs_on_its_own_mention_rules_and_type_words(endpoint, tmp_path):
    # SciERC: lowercase terms, pronouns as entities, multi-word type names; the defaults and its `mentions:`.
    import asyncio

    from ie.mentions import MentionRules, ground
    from teacher.context import RecordContext
    from teacher.likelihood_judge import NOT_ENTITY, span_scores

    dataset = load_config(resolve_config_path("scierc"))
    short = sorted(load_split(dataset, "dev")[:20], key=lambda r: len(r.text))[:2]
    write_records(tmp_path / "two.jsonl", short)
    fast = {k: v for k, v in FAST.items() if k != "max_rounds"}
    cfg = TeacherConfig(config="scierc", input=str(tmp_path / "two.jsonl"), method="crossagentie",
                        out=str(tmp_path / "out"), **fast)
    client = LLMClient.from_endpoints([endpoint], concurrency=2, max_parse_retries=0)
    out = run(cfg, client)
    saved = json.loads((out / "config.json").read_text())
    assert (saved["summarizer"], saved["max_rounds"]) == ("likelihood", 0)
    rules = MentionRules(dataset.mentions)
    for pred in read_records(out / "predictions.jsonl"):
        assert "error" not in pred.model_extra["stats"]
        assert not any(c["role"] == "debater" for c in pred.model_extra["debate"]["calls"])
        for e in pred.entities:  # what was kept passes the profile as it stands
            assert (e.start, e.end) in {(s.start, s.end) for s in ground(pred.text, e.text, rules)}
    ctx = RecordContext(Record(id="r", text="We use it for parsing ."), dataset.task_schema,
                        LLMClient.from_endpoints([endpoint]), TeacherConfig(**fast), "direct", dataset.mentions)
    scores = asyncio.run(span_scores(ctx, "it"))  # "other scientific term": words the model can say
    assert scores is not None and set(scores.probabilities) == {*dataset.task_schema.entity_types, NOT_ENTITY}
    [call] = ctx.transcript.calls
    assert "error" not in call and call["completion_tokens"] == 1


@pytest.mark.parametrize("route_by", ["answer", "likelihood"])
def test_routing_asks_the_real_server_and_calls_only_the_routed_agents(endpoint, route_by):
    import asyncio

    from teacher.runner import label_records

    schema = load_config(resolve_config_path("nyt")).task_schema
    text = "Bobby Fischer , the chess champion , lived in Reykjavik , the capital of Iceland ."
    # As the embedded run asks it: llguidance keeps the answer's lists within their bounds.
    grammar = Endpoint(endpoint.url, endpoint.model, structured_output="llguidance")
    client = LLMClient.from_endpoints([grammar], max_parse_retries=0)
    cfg = TeacherConfig(**{**FAST, "max_tokens": 96, "routing": "on", "route_by": route_by,
                           "summarizer": "likelihood", "max_rounds": 0})
    [out] = asyncio.run(label_records([Record(id="r", text=text)], "crossagentie", schema, client, cfg))
    calls, routing = out.model_extra["debate"]["calls"], out.model_extra["debate"]["routing"]
    routers = [c for c in calls if c["role"] == "router"]
    assert routers == calls[:len(routers)] and all("error" not in c for c in routers)
    assert routing["fallback"] is None
    if route_by == "answer":
        [router] = routers
        assert router["completion_tokens"] > 0 and router["answer"] == routing["answer"]
        assert set(routing["answer"]["relation_types"]) <= set(schema.relation_types)
    else:
        assert len(routers) == len(schema.entity_types) + len(schema.relation_types)
        assert all(c["completion_tokens"] == 1 for c in routers)
        assert routing["answer"] and all(0 <= p <= 1 for p in routing["answer"].values())
    agents = {f"ner:{t}" for t in schema.entity_types} | {f"re:{r}" for r in schema.relation_types}
    routed = {f"ner:{t}" for t in routing["entity_types"]} | {f"re:{r}" for r in routing["relation_types"]}
    assert routed | set(routing["skipped"]) == agents and not routed & set(routing["skipped"])
    called = {c["agent"] for c in calls if c["role"] in ("ner_agent", "re_agent")}
    assert called <= routed and out.model_extra["stats"]["agents_skipped_by_routing"] == len(routing["skipped"])
