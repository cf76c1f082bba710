"""`teacher.cross_type_debate` driven by a scripted LLM: conflicting agents see each other's claims and reasons,
and consensus settles a conflict."""
from collections import Counter

from ie.llm.fake import schema_name
from tests.teacher_script import (
    CONFLICT,
    SMITHSONIAN,
    Script,
    agent_answers,
    by_name,
    called,
    entities,
    found_args,
    label,
    on,
    relations,
    stance,
    with_pairs,
)


def test_conflict_settled_by_consensus_in_round_one_without_summarizer():
    # Options are sorted by label: A = "Smithsonian" is Loc, B = "Smithsonian" is Org.
    script = Script({**CONFLICT, ("DebateAnswer", "Loc"): stance("B"), ("DebateAnswer", "Org"): stance("B")})
    out = label(script, SMITHSONIAN, max_rounds=2, summarizer="generate")
    assert entities(out) == [("Smithsonian", "Org"), ("Washington", "Loc")]
    [conflict] = out.debate.conflicts
    assert conflict.kind == "label" and str(conflict.settled_by) == "consensus_round_1"
    assert conflict.winner == '"Smithsonian" is Org'
    assert [s.round for s in conflict.stances] == [0, 0, 1, 1]
    roles = script.roles(out)
    assert sorted(roles[4:6]) == [("debater", "ner:Loc"), ("debater", "ner:Org")]
    assert ("summarizer", "summarizer") not in roles
    assert ("re_agent", "re:OrgBased_In") in roles and ("re_agent", "re:Live_In") not in roles  # no Peop
    assert out.stats.conflicts == 1 and out.stats.unresolved_conflicts == 0


def test_debaters_see_each_others_claims_and_reasons():
    script = Script({**CONFLICT, ("DebateAnswer", "Loc"): stance("A", 0.7), ("DebateAnswer", "Org"): stance("B")})
    label(script, SMITHSONIAN, max_rounds=2)
    debate = [r.messages[1]["content"] for r in script.transport.requests if schema_name(r) == "DebateAnswer"]
    assert len(debate) == 4  # two speakers, two rounds (no consensus)
    first = debate[0]
    assert 'A) "Smithsonian" is Loc' in first and "N) none is correct" not in first  # only the Summarizer's
    assert "Org agent: B (0.90) 'Smithsonian'" in first and "Loc agent: A (0.60) ''" in first
    # A round is simultaneous: both speakers get one conflicts block, ahead of their own part (a shared prefix).
    shared = [p.split("You are the ")[0] for p in debate]
    assert shared[0] == shared[1] and shared[2] == shared[3] and shared[0] != shared[2]
    assert "(0.70) 'because'" in shared[2] and "(0.80) 'because'" in shared[2]  # round 2 sees round 1
    assert "Your items: 1." in first
    request = next(r for r in script.transport.requests if schema_name(r) == "DebateAnswer")
    assert request.params.temperature == 0.9 and request.params.frequency_penalty == 0.1


@by_name
def test_no_conflict_means_no_debate_round_and_no_summarizer(case):
    script = Script(agent_answers(case))
    out = on(case, script, max_rounds=2)
    assert {role for role, _ in script.roles(out)} == {"ner_agent", "re_agent"}
    assert out.stats.calls == len(case.schema.entity_types) + len(with_pairs(case, found_args(case)))
    assert out.debate.conflicts == []


@by_name
def test_conflict_settled_by_consensus_in_round_one(case):
    winner, loser = case.conflict_labels()
    agents = sorted(f"{'ner' if case.entity_conflict else 're'}:{t}" for t in case.conflict[int(case.entity_conflict):][:2])
    script = Script({**agent_answers(case, conflict=True),
                     **{("DebateAnswer", a.split(":", 1)[1]): stance(case.winner_letter()) for a in agents}})
    out = on(case, script, max_rounds=2)
    [conflict] = out.debate.conflicts
    assert conflict.options == sorted([winner, loser]) and list(map(str, conflict.agents)) == agents
    assert str(conflict.settled_by) == "consensus_round_1" and conflict.winner == winner
    assert called(script, out, "debater") == Counter(agents) and not called(script, out, "summarizer")
    if case.entity_conflict:
        assert (case.conflict[0], case.conflict[1]) in entities(out)
        assert (case.conflict[0], case.conflict[2]) not in entities(out)
    else:
        head, tail = case.conflict_pair
        assert (head, case.conflict[0], tail) in relations(out) and (head, case.conflict[1], tail) not in relations(out)
