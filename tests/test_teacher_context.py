"""`teacher.context`: every call goes through `RecordContext.ask`, which re-asks, records and counts, and the
transcript keeps its JSON form."""
import asyncio
import json

import pytest

from ie.config import load_config, resolve_config_path
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport
from ie.llm.types import TransportError
from teacher.config import TeacherConfig
from tests.teacher_script import (
    DIXON,
    GOLD,
    TEACHER_STATS,
    Script,
    entities,
    items,
    label,
)


def test_malformed_answer_is_reasked_through_the_client():
    script = Script({("MentionList", "Peop"): ['{"items": [{"text": "Ronald', items("Ronald Reagan")]})
    out = label(script, DIXON, method="type-agents")
    peop = next(c for c in out.debate.calls if str(c.agent) == "ner:Peop")
    assert peop.attempts == 2 and peop.error is None
    assert ("Ronald Reagan", "Peop") in entities(out) and out.stats.failed_calls == 0


def test_an_answer_that_never_validates_is_counted_not_raised():
    script = Script({("MentionList", "Peop"): "Ronald Reagan is a person."})
    out = label(script, DIXON, method="type-agents", parse_retries=0)
    assert out.stats.failed_calls == 1 and out.confidence < 0.5


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


def test_transcript_and_stats_keep_their_json_form():
    from ie.record_stats import RecordStats
    from ie.records import ConflictLog, LabelledRecord, Transcript

    conflict = {"id": "e1", "kind": "label", "options": ['"A" is Loc', '"A" is Org'], "agents": ["ner:Loc", "ner:Org"],
                "stances": [{"round": 1, "agent": "ner:Loc", "choice": "B", "confidence": 0.8, "reason": "r"}],
                "settled_by": "consensus_round_2", "winner": '"A" is Org'}
    log = ConflictLog.model_validate(conflict)
    assert log.settled_by.round == 2 and log.agents[1].name == "Org"
    assert log.model_dump(mode="json", exclude_none=True) == conflict
    transcript = Transcript(method="crossagentie", conflicts=[log], notes=["n"])
    written = LabelledRecord(id="r", text="A", debate=transcript).model_dump(mode="json", exclude_none=True)
    assert written["debate"] == {"method": "crossagentie", "calls": [], "conflicts": [conflict], "alignment": [],
                                 "extents": [], "notes": ["n"]}
    stats = RecordStats(**dict.fromkeys(TEACHER_STATS[:-1], 0), wall_s=0.5)
    stats.failed, stats.error = "timeout", "TimeoutError: t"  # as `label_one` marks a record that did not finish
    assert list(stats.as_dict()) == [*TEACHER_STATS, "failed", "error"]


@pytest.mark.parametrize("method", ["crossagentie", "direct", "one-step"])
def test_a_profile_with_spans_in_grammar_gives_every_mention_field_the_texts_span_pattern(method):
    import re

    from ie.grounding import span_pattern
    from ie.mentions import MentionProfile
    from ie.schema import Record
    from teacher.runner import label_records
    from tests.schemas import SCIERC as case
    from tests.teacher_script import agent_answers, pairs

    kind, head, tail = case.relation
    pattern = span_pattern(case.text, max_words=4)
    for profile, expected in ((MentionProfile(spans_in_grammar=True, max_words=4), pattern), (MentionProfile(), None)):
        script = Script({**agent_answers(case), ("PairList", kind): pairs((head, tail))})
        client = LLMClient([script.transport], structured_output="llguidance")
        cfg = TeacherConfig(method=method, extent_check_words=3, progress=False)
        asyncio.run(label_records([Record(id="r", text=case.text)], method, case.schema, client, cfg, mentions=profile))
        wired = [(r.response_format["json_schema"]["name"], r.grammar.partition("start: %json ")[2])
                 for r in script.transport.requests if r.grammar]
        patterns = {name: set(re.findall(r'"pattern":"((?:[^"\\]|\\.)*)"', grammar)) for name, grammar in wired}
        with_mentions = {"MentionList", "PairList", "ExtentAnswer", "DirectAnswer", "OneStepAnswer"} & set(patterns)
        assert with_mentions == {"crossagentie": {"MentionList", "PairList", "ExtentAnswer"},
                                 "direct": {"DirectAnswer"}, "one-step": {"OneStepAnswer"}}[method], patterns
        for name, found in patterns.items():
            want = {json.dumps(expected)[1:-1]} if expected and name in with_mentions else set()
            assert found == want, name
        assert "x-span" not in json.dumps(wired)


@pytest.mark.slow
def test_the_real_server_writes_only_spans_of_the_text_under_the_span_pattern(endpoint):
    import re
    from dataclasses import replace

    from ie.mentions import MentionProfile
    from ie.schema import Record
    from teacher.baselines import answer_models
    from teacher.context import RecordContext
    from teacher.templates import type_list
    from tests.schemas import SCIERC as case

    text = "We train a maximum entropy model (MaxEnt) on the Penn Treebank for part-of-speech tagging ."
    profile = MentionProfile(spans_in_grammar=True, max_words=4)
    client = LLMClient.from_endpoints([replace(endpoint, structured_output="llguidance")], max_parse_retries=0)
    ctx = RecordContext(Record(id="r", text=text), case.schema, client, TeacherConfig(max_tokens=48), "direct",
                        profile)

    async def ask():
        try:
            return await ctx.ask("direct", answer_models(ctx)["direct"], role="direct", agent="direct",
                                 params=ctx.params("extract"), type_list=type_list(case.schema))
        finally:
            await client.aclose()

    [answer] = asyncio.run(ask())
    assert answer.ok and answer.value.entities, answer.raw
    for entity in answer.value.entities:
        assert re.fullmatch(ctx.spans, entity.text) and len(entity.text.split()) <= 4, entity.text
