"""`teacher.uncontested_check`: a mention only one agent listed kept, dropped or retyped by the likelihood
Summarizer's most probable answer for its span; scripted, then (slow) against the real server."""

import pytest

from ie.config import ConfigError
from ie.debate_view import entity_decision
from teacher.config import TeacherConfig
from teacher.report import run_summary
from tests.teacher_script import CONFLICT, SMITHSONIAN, Script, entities, label

# "Smithsonian" is contested (Org and Loc claim it), "Washington" only the Loc agent lists.
JUDGED = {**CONFLICT, ("choice", "Smithsonian"): {"organization": 0.6, "location": 0.3, "none": 0.1}}


def checked(washington: dict[str, float], **cfg):
    script = Script({**JUDGED, ("choice", "Washington"): washington})
    return script, label(script, SMITHSONIAN, max_rounds=0, summarizer="likelihood", check_uncontested=True, **cfg)


def test_an_uncontested_mention_whose_type_is_most_probable_is_kept_as_it_was():
    _, out = checked({"location": 0.7, "none": 0.2, "person": 0.1})
    assert entities(out) == [("Smithsonian", "Org"), ("Washington", "Loc")]
    [check] = out.debate.checks
    assert check.model_dump(exclude_none=True) == {"mention": "Washington", "type": "Loc", "outcome": "kept",
                                                   "verdict": "Loc", "probability": 0.7}
    assert out.entities[1].confidence == pytest.approx(0.9)  # as uncontested: its agent's confidence


def test_an_uncontested_mention_the_model_finds_no_entity_is_dropped():
    _, out = checked({"none": 0.5, "location": 0.3, "person": 0.2})
    assert entities(out) == [("Smithsonian", "Org")]
    assert [(c.mention, c.outcome, c.verdict) for c in out.debate.checks] == [("Washington", "dropped", "none")]


def test_an_uncontested_mention_takes_its_span_s_most_probable_type_backed_by_that_probability():
    _, out = checked({"person": 0.6, "location": 0.3, "none": 0.1})
    assert entities(out) == [("Smithsonian", "Org"), ("Washington", "Peop")]
    assert out.debate.checks[0].outcome == "retyped" and out.entities[1].confidence == pytest.approx(0.6 * 0.8)
    assert run_summary([out])["uncontested_checks"] == {"retyped": 1}  # what report.md prints
    assert entity_decision(out.debate, out.entities[1]).changes == ["uncontested check: retyped from Loc (Peop 0.60)"]


def test_the_check_is_off_by_default_and_asks_only_about_uncontested_mentions():
    script = Script({**JUDGED, ("choice", "Washington"): {"none": 0.9, "location": 0.1}})
    out = label(script, SMITHSONIAN, max_rounds=0, summarizer="likelihood")
    assert ("Washington", "Loc") in entities(out) and out.debate.checks == []
    assert [c.asked for c in out.debate.calls if c.role == "summarizer"] == ["Smithsonian"]
    script, out = checked({"none": 0.9, "location": 0.1})
    assert sorted(c.asked for c in out.debate.calls if c.role == "summarizer") == ["Smithsonian", "Washington"]


def test_a_mention_the_endpoint_cannot_score_is_kept():
    script, out = checked("no alternatives")  # an answer without top_logprobs
    assert ("Washington", "Loc") in entities(out) and out.debate.checks == []


def test_the_check_needs_the_likelihood_summarizer():
    with pytest.raises(ConfigError, match="teacher.check_uncontested: the likelihood Summarizer checks"):
        TeacherConfig(summarizer="generate", check_uncontested=True)


@pytest.mark.slow
def test_the_check_follows_the_real_model_s_most_probable_answer(endpoint):
    import asyncio

    from ie.claims import AgentId, Arg, EntityClaim, uncontested
    from ie.config import load_config, resolve_config_path
    from ie.llm.client import LLMClient
    from ie.schema import Record
    from teacher.context import RecordContext
    from teacher.likelihood_judge import NOT_ENTITY, span_scores
    from teacher.uncontested_check import check_uncontested
    from tests.teacher_script import FAST

    schema = load_config(resolve_config_path("conll04")).task_schema
    text = "John Wilkes Booth , who assassinated President Lincoln , was an actor ."
    ctx = RecordContext(Record(id="r", text=text), schema, LLMClient.from_endpoints([endpoint]),
                        TeacherConfig(**FAST, check_uncontested=True), "crossagentie")
    mentions, claimed = ("John Wilkes Booth", "Lincoln", "an actor"), "Peop"
    claims = [EntityClaim(Arg(text.index(m), text.index(m) + len(m), claimed, m), AgentId("ner", claimed), 0.9)
              for m in mentions]

    async def check_then_score():
        kept = await check_uncontested(ctx, uncontested(claims))
        calls = ctx.usage.calls
        return kept, {m: s.probabilities for m in mentions if (s := await span_scores(ctx, m))}, calls

    kept, scores, calls = asyncio.run(check_then_score())
    assert scores, "the model gave none of these mentions a score"
    assert ctx.usage.calls == calls == len(mentions)  # one call a mention; scoring again replays it
    tops = {m: max(p, key=p.__getitem__) for m, p in scores.items()}
    expected = [(m, tops.get(m, claimed)) for m in mentions if tops.get(m) != NOT_ENTITY]  # unscored: kept as it was
    assert [(d.claim.arg.text, d.claim.arg.type) for d in kept] == expected
    assert [(c.mention, c.verdict) for c in ctx.transcript.checks] == [(m, tops[m]) for m in mentions if m in tops]
