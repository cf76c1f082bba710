"""`teacher.context`: every call goes through `RecordContext.ask`, which re-asks, records and counts, and the
transcript keeps its JSON form."""
import asyncio

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
    peop = next(c for c in out.model_extra["debate"]["calls"] if c["agent"] == "ner:Peop")
    assert peop["attempts"] == 2 and "error" not in peop
    assert ("Ronald Reagan", "Peop") in entities(out) and out.model_extra["stats"]["failed_calls"] == 0


def test_an_answer_that_never_validates_is_counted_not_raised():
    script = Script({("MentionList", "Peop"): "Ronald Reagan is a person."})
    out = label(script, DIXON, method="type-agents", parse_retries=0)
    assert out.model_extra["stats"]["failed_calls"] == 1 and out.model_extra["confidence"] < 0.5


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
