"""`teacher.cross_task_debate` driven by a scripted LLM: the entities relations require go back to the type
agents, what they add or retype goes to the RE agents that have not seen it, in bounded rounds."""
from collections import Counter

import pytest

from ie.claims import Arg
from ie.llm.fake import schema_name
from tests.schemas import NYT
from tests.teacher_script import (
    DIXON,
    FEEDBACK,
    Script,
    agent_answers,
    by_name,
    called,
    entities,
    found_args,
    label,
    on,
    pairs,
    relations,
    with_pairs,
)


def test_relation_feedback_adds_an_entity_ner_missed():
    script = Script({**FEEDBACK, ("VerifyAnswer", "Loc"): {"verdicts": [{"item": 1, "accept": True,
                                                                           "confidence": 0.9}]}})
    out = label(script, DIXON, summarizer="generate")
    assert entities(out) == [("Ronald Reagan", "Peop"), ("Dixon", "Loc"), ("Illinois", "Loc")]
    assert [(out.entities[r.head].text, r.type, out.entities[r.tail].text) for r in out.relations] == [
        ("Ronald Reagan", "Live_In", "Illinois")]
    first = out.debate.alignment[0]
    assert first.before.re_only == ["Illinois/Loc"] and first.after.re_only == []
    assert [a.model_dump(exclude_none=True) for a in first.actions] == [{"action": "added", "entity": "Illinois", "type": "Loc"}]
    verify = next(r for r in script.transport.requests if schema_name(r) == "VerifyAnswer")
    assert "Ronald Reagan lives in Illinois" in verify.messages[1]["content"]
    # Round 2: only Located_In has a candidate it never saw (Illinois); Live_In named it itself.
    assert script.roles(out).count(("re_agent", "re:Live_In")) == 1
    assert script.roles(out).count(("re_agent", "re:Located_In")) == 1


def test_alignment_drops_a_relation_whose_argument_is_rejected():
    script = Script({**FEEDBACK, ("VerifyAnswer", "Loc"): {"verdicts": [{"item": 1, "accept": False,
                                                                           "confidence": 0.9}]}})
    out = label(script, DIXON)
    assert entities(out) == [("Ronald Reagan", "Peop"), ("Dixon", "Loc")] and out.relations == []
    first = out.debate.alignment[0]
    assert [a.model_dump(exclude_none=True) for a in first.actions] == [{"action": "dropped_relation", "relation": "Ronald Reagan Live_In Illinois"}]
    assert first.after.re_only == []


@by_name
@pytest.mark.parametrize("accept", [True, False])
def test_relation_feedback_checks_the_argument_ner_missed(case, accept):
    rel, head, tail = case.relation
    mention, etype = case.missing
    verdict = {"verdicts": [{"item": 1, "accept": accept, "confidence": 0.9}]}
    script = Script({**agent_answers(case), ("PairList", rel): pairs((head, tail)), ("VerifyAnswer", etype): verdict})
    out = on(case, script, summarizer="generate")
    [verify] = [r for r in script.transport.requests if schema_name(r) == "VerifyAnswer"]
    assert f'1. "{mention}"' in verify.messages[1]["content"]
    first = out.debate.alignment[0]
    assert first.before.re_only == [f"{mention}/{etype}"] and first.after.re_only == []
    if accept:
        assert (mention, etype) in entities(out)
        [(h, r, t)] = [x for x in relations(out) if x[1] == rel]
        assert mention in (h, t) and (head in h and tail in t)
        if case.schema.nested_entities:  # the argument is the mention named, not the one nested inside it
            assert (h, t) == (head, tail)
        assert [a.model_dump(exclude_none=True) for a in first.actions] == [{"action": "added", "entity": mention, "type": etype}]
    else:
        assert (mention, etype) not in entities(out) and not [x for x in relations(out) if x[1] == rel]
        assert first.actions[0].action == "dropped_relation"


@by_name
def test_feedback_stops_when_a_round_changes_no_entity(case):
    rel, head, tail = case.relation
    reject = {"verdicts": [{"item": 1, "accept": False, "confidence": 0.9}]}
    script = Script({**agent_answers(case), ("PairList", rel): pairs((head, tail)),
                     ("VerifyAnswer", case.missing[1]): reject})
    out = on(case, script, cross_task_rounds=3, summarizer="generate")
    assert len(out.debate.alignment) == 1
    assert set(called(script, out, "re_agent").values()) == {1}
    assert called(script, out, "feedback") == {f"ner:{case.missing[1]}": 1}


@by_name
def test_a_round_that_adds_an_entity_reruns_only_the_agents_that_have_not_seen_it(case):
    rel, head, tail = case.relation
    mention, etype = case.missing
    accept = {"verdicts": [{"item": 1, "accept": True, "confidence": 0.9}]}
    script = Script({**agent_answers(case), ("PairList", rel): pairs((head, tail)), ("VerifyAnswer", etype): accept})
    out = on(case, script, cross_task_rounds=3, summarizer="generate")
    before = found_args(case)
    start = case.text.index(mention)
    after = before + [Arg(start, start + len(mention), etype, mention)]
    new = {name for name, spec in case.schema.relation_types.items()
           if etype in (spec.head or [etype]) + (spec.tail or [etype])} & with_pairs(case, after) - {rel}
    expected = Counter({f"re:{name}": 1 for name in with_pairs(case, before)})
    expected.update(f"re:{name}" for name in new)
    assert called(script, out, "re_agent") == expected
    assert len(out.debate.alignment) == 2  # round 2 added nothing: no round 3


def test_an_entity_checked_once_is_not_asked_about_again():
    # Round 1: "Iceland" is accepted, "capital" rejected. Round 2 re-runs place_lived (it has not seen Iceland),
    # which names "capital" again: its verdict stands, no second check.
    case = NYT
    verdicts = {"verdicts": [{"item": 1, "accept": False, "confidence": 0.9},
                             {"item": 2, "accept": True, "confidence": 0.9}]}
    script = Script({**agent_answers(case), ("PairList", case.relation[0]): pairs(case.relation[1:]),
                     ("PairList", "/people/person/place_lived"): pairs(("Bobby Fischer", "capital")),
                     "VerifyAnswer": verdicts})
    out = on(case, script, summarizer="generate")
    assert [len(a.actions) for a in out.debate.alignment] == [2, 1]
    assert called(script, out, "feedback") == {"ner:Entity": 1}
    assert called(script, out, "re_agent")["re:/people/person/place_lived"] == 2
    assert ("Iceland", "Entity") in entities(out) and ("capital", "Entity") not in entities(out)
