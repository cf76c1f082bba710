"""ie.claims' typed values: agent ids and settlements keep the one text form transcripts have always held."""
import pytest

from ie.claims import AgentId, Settlement


@pytest.mark.parametrize("text, agent", [
    ("ner:Peop", AgentId("ner", "Peop")), ("re:Live_In", AgentId("re", "Live_In")),
    ("summarizer:likelihood", AgentId("summarizer", "likelihood")), ("direct", AgentId("direct")),
    ("self-consistency", AgentId("self-consistency")),
])
def test_agent_id_round_trips_its_text_form(text, agent):
    assert AgentId.parse(text) == agent and str(agent) == text


def test_agent_ids_sort_as_their_text():
    texts = ["ner:Org", "ner-x:A", "ner:Loc", "ner:Loc2", "direct"]
    assert [str(a) for a in sorted(AgentId.parse(t) for t in texts)] == sorted(texts)


@pytest.mark.parametrize("text, settlement", [
    ("consensus_round_2", Settlement("consensus_round", 2)), ("consensus_round_10", Settlement("consensus_round", 10)),
    ("uncontested", Settlement("uncontested")), ("summarizer", Settlement("summarizer")),
    ("fallback", Settlement("fallback")), ("highest_confidence", Settlement("highest_confidence")),
    ("vote", Settlement("vote")), ("added_by_feedback", Settlement("added_by_feedback")),
    ("retyped_by_feedback", Settlement("retyped_by_feedback")),
])
def test_settlement_round_trips_its_text_form(text, settlement):
    assert Settlement.parse(text) == settlement and str(settlement) == text


@pytest.mark.parametrize("text", ["consensus_round", "consensus_round_x", "consensus_round_", "settled", ""])
def test_settlement_rejects_an_unknown_text(text):
    with pytest.raises(ValueError, match="settlement"):
        Settlement.parse(text)


def test_a_round_goes_with_a_consensus_only():
    with pytest.raises(ValueError, match="round"):
        Settlement("consensus_round")
    with pytest.raises(ValueError, match="round"):
        Settlement("summarizer", 1)
