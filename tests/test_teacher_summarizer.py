"""`teacher.summarizer` driven by a scripted LLM: what a debate leaves open, one written verdict settles."""
import asyncio
import json

from ie.llm.client import LLMClient
from ie.llm.fake import schema_name
from ie.schema import Record
from teacher.config import TeacherConfig
from teacher.runner import label_records
from tests.teacher_script import (
    CONFLICT,
    SCHEMA,
    SMITHSONIAN,
    Script,
    agent_answers,
    by_name,
    called,
    entities,
    label,
    on,
    stance,
)


def test_deadlock_goes_to_the_summarizer_after_max_rounds():
    script = Script({**CONFLICT, ("DebateAnswer", "Loc"): stance("A"), ("DebateAnswer", "Org"): stance("B"),
                     "SummaryAnswer": stance("B", 0.7, key="verdicts")})
    out = label(script, SMITHSONIAN, max_rounds=2, summarizer="generate")
    [conflict] = out.debate.conflicts
    assert str(conflict.settled_by) == "summarizer" and conflict.winner == '"Smithsonian" is Org'
    roles = script.roles(out)
    assert roles.count(("debater", "ner:Loc")) == 2 and roles.count(("summarizer", "summarizer")) == 1
    assert ("Smithsonian", "Org") in entities(out)


def test_only_the_summarizer_may_reject_every_option():
    # A debater's N is not an option: the Loc agent keeps its stance, so round 1 ends without consensus.
    script = Script({**CONFLICT, ("DebateAnswer", "Loc"): stance("N"), ("DebateAnswer", "Org"): stance("B"),
                     "SummaryAnswer": stance("N", key="verdicts")})
    out = label(script, SMITHSONIAN, max_rounds=1)
    assert entities(out) == [("Washington", "Loc")]
    [conflict] = out.debate.conflicts
    assert [s.choice for s in conflict.stances if str(s.agent) == "ner:Loc"] == ["A"]
    assert str(conflict.settled_by) == "summarizer" and conflict.winner is None
    summary = next(r for r in script.transport.requests if schema_name(r) == "SummaryAnswer")
    assert "N) none is correct" in summary.messages[1]["content"]


@by_name
def test_deadlock_goes_to_the_written_summarizer(case):
    script = Script({**agent_answers(case, conflict=True), "DebateAnswer": stance("N"),
                     "SummaryAnswer": stance(case.winner_letter(), key="verdicts")})
    out = on(case, script, max_rounds=1, summarizer="generate")
    [conflict] = out.debate.conflicts
    assert str(conflict.settled_by) == "summarizer" and conflict.winner == case.conflict_labels()[0]
    assert sum(called(script, out, "debater").values()) == 2 and called(script, out, "summarizer") == {"summarizer": 1}


def test_the_summarizer_and_the_debaters_may_answer_only_the_items_they_are_asked():
    script = Script({**CONFLICT, ("DebateAnswer", "Loc"): stance("A"), ("DebateAnswer", "Org"): stance("B"),
                     "SummaryAnswer": stance("B", key="verdicts")})
    client = LLMClient([script.transport], structured_output="llguidance")  # the grammar keeps item bounds
    asyncio.run(label_records([Record(id="r", text=SMITHSONIAN)], "crossagentie", SCHEMA, client,
                              TeacherConfig(max_rounds=1, summarizer="generate")))
    grammars = {schema_name(r): json.loads(r.grammar.split("%json ", 1)[1]) for r in script.transport.requests}
    # One open conflict: one verdict, not the five a small model writes on items that do not exist.
    assert grammars["SummaryAnswer"]["properties"]["verdicts"]["maxItems"] == 1
    assert grammars["DebateAnswer"]["properties"]["stances"]["maxItems"] == 1
