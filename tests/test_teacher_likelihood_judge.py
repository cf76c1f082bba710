"""`teacher.likelihood_judge`: a span's type by the model's next-token probabilities of the type words, for
conflicts and for the entities relations require; scripted, then (slow) against the real server."""

import pytest

from ie.config import load_config, resolve_config_path
from ie.llm.client import LLMClient
from ie.llm.fake import schema_name
from ie.schema import Record
from teacher.config import TeacherConfig
from teacher.likelihood_judge import type_words
from tests.teacher_script import (
    CONFLICT,
    DIXON,
    FAST,
    FEEDBACK,
    SMITHSONIAN,
    Script,
    agent_answers,
    by_name,
    called,
    entities,
    items,
    label,
    on,
    pairs,
    relations,
    stance,
)


def test_likelihood_summarizer_settles_by_the_span_s_most_probable_type_word():
    script = Script({**CONFLICT, ("choice", "Smithsonian"): {"organization": 0.6, "location": 0.3, "none": 0.1}})
    out = label(script, SMITHSONIAN, max_rounds=0, summarizer="likelihood")
    assert entities(out) == [("Smithsonian", "Org"), ("Washington", "Loc")]
    [conflict] = out.debate.conflicts
    assert str(conflict.settled_by) == "summarizer" and conflict.winner == '"Smithsonian" is Org'
    [judged] = [c for c in out.debate.calls if c.role == "summarizer"]
    assert str(judged.agent) == "summarizer:likelihood" and judged.asked == "Smithsonian"
    assert judged.answer["probabilities"]["Org"] == pytest.approx(0.6)
    assert not any(schema_name(r) in ("SummaryAnswer", "DebateAnswer") for r in script.transport.requests)
    prompt = next(r for r in script.transport.requests if r.response_format is None).messages[1]["content"]
    assert prompt.startswith('Entity types: person (like "Ronald Reagan" or "Dole"); location (like "America" or')
    assert 'date / number / nationality / event / product / title (like "1983" or "Americans"); none' in prompt


def test_likelihood_summarizer_rejects_a_span_only_when_none_beats_every_option():
    script = Script({**CONFLICT, ("choice", "Smithsonian"): {"none": 0.5, "organization": 0.3, "location": 0.2}})
    out = label(script, SMITHSONIAN, max_rounds=0, summarizer="likelihood")
    assert entities(out) == [("Washington", "Loc")]
    assert out.debate.conflicts[0].winner is None


def test_likelihood_summarizer_gives_a_label_conflict_s_span_its_most_probable_type_even_if_unclaimed():
    # The Org and Loc agents both claim "Smithsonian"; the model finds "person" most probable for it.
    script = Script({**CONFLICT, ("choice", "Smithsonian"): {"person": 0.5, "organization": 0.3, "none": 0.2}})
    out = label(script, SMITHSONIAN, max_rounds=0, summarizer="likelihood")
    assert entities(out) == [("Smithsonian", "Peop"), ("Washington", "Loc")]
    [conflict] = out.debate.conflicts
    assert conflict.options == ['"Smithsonian" is Loc', '"Smithsonian" is Org']
    assert str(conflict.settled_by) == "summarizer" and conflict.winner == '"Smithsonian" is Peop'
    assert out.entities[0].confidence == pytest.approx(0.5 * 0.8)  # the verdict alone backs it, as settled by it


def test_likelihood_summarizer_without_logprobs_falls_back_to_the_written_verdict():
    script = Script({**CONFLICT, "SummaryAnswer": stance("A", key="verdicts")})
    out = label(script, SMITHSONIAN, max_rounds=0, summarizer="likelihood")
    assert ("Smithsonian", "Loc") in entities(out)
    calls = out.debate.calls
    agents = [c.agent for c in calls]
    judged = calls[agents.index("summarizer:likelihood")]
    assert "top_logprobs" in judged.error and agents.index("summarizer") > agents.index("summarizer:likelihood")
    assert out.stats.failed_calls == 1


def test_likelihood_summarizer_checks_what_relations_require_instead_of_the_type_agents():
    accept = Script({**FEEDBACK, ("choice", "Illinois"): {"location": 0.7, "person": 0.3}})
    out = label(accept, DIXON, summarizer="likelihood")
    assert ("Illinois", "Loc") in entities(out) and len(out.relations) == 1
    assert not any(schema_name(r) == "VerifyAnswer" for r in accept.transport.requests)
    assert ("summarizer", "summarizer:likelihood") in accept.roles(out)
    # "Illinois" most probably a person: Live_In's tail is not a location, so the relation goes.
    reject = Script({**FEEDBACK, ("choice", "Illinois"): {"person": 0.6, "location": 0.4}})
    out = label(reject, DIXON, summarizer="likelihood")
    assert ("Illinois", "Loc") not in entities(out) and out.relations == []
    assert [a.model_dump(exclude_none=True) for a in out.debate.alignment[0].actions] == [
        {"action": "dropped_relation", "relation": "Ronald Reagan Live_In Illinois"}]


def test_a_span_judged_in_the_debate_is_not_scored_again_for_alignment():
    # "Illinois" judged a person; Live_In then requires it as a location: the check reuses that one answer.
    script = Script({**FEEDBACK, ("MentionList", "Peop"): items("Ronald Reagan", "Illinois"),
                     ("MentionList", "Loc"): items("Dixon", "Illinois"),
                     ("choice", "Illinois"): {"person": 0.6, "location": 0.4}})
    out = label(script, DIXON, max_rounds=0, summarizer="likelihood")
    assert ("Illinois", "Peop") in entities(out) and out.relations == []
    assert out.debate.alignment[0].before.type_mismatch == ["Illinois: Peop -> Loc"]
    asked = [r for r in script.transport.requests if r.response_format is None]
    assert len(asked) == 1 and [c.asked for c in out.debate.calls].count("Illinois") == 1


@by_name
def test_likelihood_summarizer_on_each_schema(case):
    # Entity conflicts go to the span's most probable type word; relation conflicts to the written verdict.
    answers = {**agent_answers(case, conflict=True), "SummaryAnswer": stance(case.winner_letter(), key="verdicts")}
    if case.entity_conflict:
        mention, winner, loser = case.conflict
        words = type_words(case.schema)
        answers[("choice", mention)] = {words[winner][0]: 0.7, words[loser][0]: 0.2, "none": 0.1}
    script = Script(answers)
    out = on(case, script, max_rounds=0, summarizer="likelihood")
    [conflict] = out.debate.conflicts
    assert str(conflict.settled_by) == "summarizer" and conflict.winner == case.conflict_labels()[0]
    judges = called(script, out, "summarizer")
    assert judges == ({"summarizer:likelihood": 1} if case.entity_conflict else {"summarizer": 1})
    assert not called(script, out, "debater")


@by_name
def test_likelihood_summarizer_checks_the_argument_ner_missed(case):
    rel, head, tail = case.relation
    mention, etype = case.missing
    script = Script({**agent_answers(case), ("PairList", rel): pairs((head, tail)),
                     ("choice", mention): {type_words(case.schema)[etype][0]: 0.8, "none": 0.2}})
    out = on(case, script, max_rounds=0, summarizer="likelihood")
    assert (mention, etype) in entities(out) and [x for x in relations(out) if x[1] == rel]
    assert not any(schema_name(r) == "VerifyAnswer" for r in script.transport.requests)


@pytest.mark.slow
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
    assert call.asked == "Lincoln" and call.completion_tokens == 1 and call.error is None
    assert ctx.usage.calls == 1


@pytest.mark.slow
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
