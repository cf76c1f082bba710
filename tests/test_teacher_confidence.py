"""`teacher.confidence`, pure: what an item and a record are trusted with."""
import pytest

from ie.claims import AgentId, Arg, Decision, EntityClaim, RelationClaim, Settlement
from teacher.confidence import record_confidence, score, settled_weight
from tests.hand_claims import decided


def test_confidence_rewards_agreement_and_penalises_failures():
    weight = [settled_weight(Settlement.parse(s)) for s in
              ("uncontested", "consensus_round_1", "consensus_round_2", "summarizer", "fallback")]
    assert weight == sorted(weight, reverse=True) and len(set(weight)) == len(weight)
    reagan, rome = Arg(0, 6, "Peop", "Reagan"), Arg(10, 14, "Loc", "Rome")
    ents = [Decision(EntityClaim(reagan, AgentId("a"), 0.8), (0.8, 0.6), Settlement("consensus_round", 1)),
            decided(EntityClaim(rome, AgentId("b"), 0.8), 0.8, "summarizer")]
    rels = [decided(RelationClaim(reagan, rome, "Live_In", AgentId("c"), 0.9))]
    scored, scored_rels = score(ents, rels)
    assert scored[0].confidence == pytest.approx(1 - (1 - 0.7 * 0.95) * (1 - 0.5 * scored_rels[0].confidence))
    assert scored_rels[0].confidence == pytest.approx(0.9 * (0.64 ** 0.5), abs=1e-4)
    assert all(0 <= d.confidence <= 1 for d in scored + scored_rels)
    assert record_confidence([0.9, 0.5], 0, 0) == pytest.approx(0.6)
    assert record_confidence([0.9, 0.5], 1, 1) == pytest.approx(0.6 * 0.5 * 0.8)
    assert record_confidence([], 0, 0) == 0.5
