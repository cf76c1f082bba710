"""`teacher.answers`: the agents' answers are lenient (a confidence of 85 is 0.85, a long quote or list is cut) and
typed to the schema and the dataset's mention profile."""
import pytest
from pydantic import ValidationError

from ie.mentions import MentionProfile
from teacher.answers import (
    Stance,
    Verdict,
    agent_answers,
    debate_answer,
    summary_answer,
    typed_answers,
    verify_answer,
)

PROFILE = MentionProfile(max_chars=10, items_per_agent=2)


def test_a_near_miss_is_read_not_refused():
    stance = Stance.model_validate({"item": 1, "choice": "A", "confidence": 85, "reason": "x" * 30})
    assert stance.confidence == 0.85 and stance.reason == "x" * 20
    assert [Verdict(item=1, accept=True, confidence=c).confidence for c in (0.4, 1, 250, -3)] == [0.4, 1.0, 1.0, 0.0]
    many = [{"item": i, "accept": True, "confidence": 1} for i in range(8)]
    assert len(verify_answer(8).model_validate({"verdicts": many}).verdicts) == 5
    mentions = agent_answers(PROFILE).mention_list.model_validate(
        {"items": [{"text": "Smithsonian Institution", "confidence": 0.9}] * 3})
    assert [m.text for m in mentions.items] == ["Smithsonia"] * 2  # the profile's max_chars and items_per_agent
    assert agent_answers(PROFILE) is agent_answers(MentionProfile(max_chars=10, items_per_agent=2))


def test_a_relation_agent_lists_at_most_pairs_per_agent_else_items_per_agent():
    pair = {"head": "Rome", "tail": "Italy", "confidence": 0.9}
    for profile, pairs in ((PROFILE, 2), (PROFILE.model_copy(update={"pairs_per_agent": 1}), 1)):
        answers = agent_answers(profile)
        assert len(answers.pair_list.model_validate({"items": [pair] * 3}).items) == pairs
        assert answers.pair_list.model_json_schema()["properties"]["items"]["maxItems"] == pairs  # the grammar's bound
        assert answers.mention_list.model_json_schema()["properties"]["items"]["maxItems"] == 2


def test_an_answer_on_numbered_items_lists_at_most_one_entry_per_item_asked():
    stances = [{"item": i, "choice": "A", "confidence": 0.9} for i in range(1, 6)]
    for asked in (1, 3, 5, 8):
        summary = summary_answer(asked, "AB")
        assert summary.__name__ == "SummaryAnswer"  # the response_format name the server and the fakes see
        bounds = summary.model_json_schema()["properties"]["verdicts"]
        assert bounds["minItems"] == bounds["maxItems"] == min(asked, 5)  # a verdict on every conflict asked
        assert len(summary.model_validate({"verdicts": stances}).verdicts) == min(asked, 5)


def test_a_stance_s_grammar_offers_only_the_letters_of_the_options_asked():
    for answer, key in ((summary_answer(2, "ABCN"), "verdicts"), (debate_answer(2, "AB"), "stances")):
        schema = answer.model_json_schema()
        stance = schema["$defs"][schema["properties"][key]["items"]["$ref"].split("/")[-1]]
        assert stance["properties"]["choice"]["enum"] == list("ABCN" if key == "verdicts" else "AB")
        # validation stays lenient: a letter naming no option is read, and `parse_letter` skips it
        assert answer.model_validate({key: [{"item": 1, "choice": "Z", "confidence": 1}]})


def test_the_baselines_answers_hold_only_the_schema_s_types():
    assert sorted(typed_answers(("Peop",), (), PROFILE)) == ["direct"]  # no relation types: no relation answers
    assert sorted(typed_answers(("Peop",), ("Kill",), PROFILE)) == ["direct", "direct_re", "one_step"]
    with pytest.raises(ValidationError):
        typed_answers(("Peop",), (), PROFILE)["direct"].model_validate(
            {"entities": [{"text": "Rome", "type": "Loc", "confidence": 1}]})


@pytest.mark.slow
def test_the_real_server_writes_a_verdict_on_every_conflict_with_a_letter_it_was_offered(endpoint):
    """llguidance (the embedded llama.cpp's grammar) enforces the exact count and the letters: smollm2, asked
    about three conflicts, answers three verdicts, each choosing among A, B and N."""
    import asyncio

    from ie.llm.client import Endpoint, LLMClient

    guided = Endpoint(endpoint.url, endpoint.model, structured_output="llguidance")
    prompt = ("Three conflicts. 1: 'Rome' is A) Loc or B) Org. 2: 'IBM' is A) Org or B) Peop. 3: 'Ann' is A) Peop "
              "or B) Loc. Answer each item with its letter (N: none is correct), a confidence and a short reason.")

    async def ask():
        client = LLMClient.from_endpoints([guided], backoff_s=0.0)
        try:
            [completion] = await client.structured([{"role": "user", "content": prompt}], summary_answer(3, "ABN"))
            return completion
        finally:
            await client.aclose()

    answer = asyncio.run(ask()).value
    assert len(answer.verdicts) == 3 and {v.choice for v in answer.verdicts} <= set("ABN")
