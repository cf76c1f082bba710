"""ie.claims: agent ids and settlements keep the one text form transcripts have always held, and a relation's
arguments are grounded on the entities known."""
import pytest

from ie.claims import AgentId, Arg, Settlement, relation_claim
from ie.config import load_config, resolve_config_path
from ie.mentions import MentionRules


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


CONLL04 = load_config(resolve_config_path("conll04"))
SCHEMA = CONLL04.task_schema
RULES = MentionRules(CONLL04.mentions)


def test_relation_arguments_snap_to_known_entities_and_take_allowed_types():
    text = "Ronald Reagan grew up in Dixon , Illinois ."
    known = [Arg(0, 13, "Peop", "Ronald Reagan")]
    claim = relation_claim(text, "Reagan", "Illinois", "Live_In", SCHEMA, known, RULES, AgentId("re", "Live_In"), 0.7)
    assert claim.head == known[0] and claim.tail == Arg(33, 41, "Loc", "Illinois")
    assert relation_claim(text, "Reagan", "Paris", "Live_In", SCHEMA, known, RULES, AgentId("re", "Live_In"), 0.7) is None
