"""`teacher.name_extent`: a long settled mention cut to the name inside it; scripted, then (slow) against the
real server."""

import pytest

from ie.config import load_config, resolve_config_path
from ie.llm.client import LLMClient
from ie.llm.fake import schema_name
from ie.records import ExtentLog
from ie.schema import Record
from teacher.config import TeacherConfig
from teacher.likelihood_judge import type_words
from teacher.report import run_summary
from tests.teacher_script import FAST, Script, agent_answers, by_name, entities, items, label, on

COATS = "Navy Capt. Michael Coats of Boise said Navy Capt. Michael Coats flew ."


def test_extent_check_cuts_a_long_mention_to_the_name_inside_it_everywhere():
    script = Script({("MentionList", "Peop"): items("Navy Capt. Michael Coats"), ("MentionList", "Loc"): items("Boise"),
                     "ExtentAnswer": {"name": "Michael Coats"}})
    out = label(script, COATS, extent_check_words=3)
    assert entities(out) == [("Michael Coats", "Peop"), ("Boise", "Loc"), ("Michael Coats", "Peop")]
    assert out.debate.extents == [ExtentLog(mention="Navy Capt. Michael Coats", type="Peop", name="Michael Coats",
                                            trimmed_to="Michael Coats")]
    [asked] = [r for r in script.transport.requests if schema_name(r) == "ExtentAnswer"]  # one per distinct mention
    assert 'In this text, "Navy Capt. Michael Coats" was labelled person.' in asked.messages[1]["content"]
    assert script.roles(out).count(("extent", "ner:Peop")) == 1
    assert run_summary([out])["extents"] == {"checked": 1, "trimmed": 1}  # what report.md prints


@pytest.mark.parametrize("answer", ["Boise", "Michael Coats of Boise", "Navy Capt. Michael Coats", "Zed"])
def test_extent_check_keeps_the_mention_when_the_name_is_not_a_shorter_span_inside_it(answer):
    script = Script({("MentionList", "Peop"): items("Navy Capt. Michael Coats"), "ExtentAnswer": {"name": answer}})
    out = label(script, COATS, extent_check_words=3)
    assert entities(out) == [("Navy Capt. Michael Coats", "Peop")] * 2
    assert out.debate.extents[0].trimmed_to is None


def test_extent_check_is_off_at_zero_and_skips_short_mentions():
    script = Script({("MentionList", "Peop"): items("Navy Capt. Michael Coats"), ("MentionList", "Loc"): items("Boise"),
                     "ExtentAnswer": {"name": "Michael Coats"}})
    assert entities(label(script, COATS))[0] == ("Navy Capt. Michael Coats", "Peop")
    out = label(script, COATS, extent_check_words=5)
    assert out.debate.extents == []
    assert not any(schema_name(r) == "ExtentAnswer" for r in script.transport.requests)


@by_name
def test_extent_check_trims_a_long_mention_on_each_schema(case):
    long, etype, name = case.long
    script = Script({**agent_answers(case), "ExtentAnswer": {"name": name}})
    out = on(case, script, extent_check_words=3)
    assert (name, etype) in entities(out) and (long, etype) not in entities(out)
    assert ExtentLog(mention=long, type=etype, name=name, trimmed_to=name) in out.debate.extents
    asked = [r.messages[1]["content"] for r in script.transport.requests if schema_name(r) == "ExtentAnswer"]
    assert sum(f'"{long}" was labelled {type_words(case.schema)[etype][0]}' in a for a in asked) == 1


@pytest.mark.slow
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
    assert call.role == "extent" and call.prompt_tokens > 0 and call.error is None
    [check] = ctx.transcript.extents
    assert check.mention == long.text and check.name == call.answer["name"]
    got = person.claim.arg
    assert long.start <= got.start and got.end <= long.end and text[got.start:got.end] == got.text
    assert check.trimmed_to == (got.text if got != long else None) and org.claim.arg == short
