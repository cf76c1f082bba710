"""`teacher.alignment`, pure: Δ between the entities NER found and those the relations require, and its
resolution."""

from ie.claims import AgentId, Arg, RelationClaim
from teacher.alignment import Check, align, delta
from tests.hand_claims import decided, ent


def test_delta_is_the_symmetric_difference_and_alignment_resolves_re_side():
    reagan, dixon = Arg(0, 13, "Peop", "Ronald Reagan"), Arg(25, 30, "Loc", "Dixon")
    illinois, dixon_org = Arg(33, 41, "Loc", "Illinois"), Arg(25, 30, "Org", "Dixon")
    entities = [decided(ent("Ronald Reagan", 0, "Peop")), decided(ent("Dixon", 25, "Org", 0.5), 0.5)]
    relations = [decided(RelationClaim(reagan, illinois, "Live_In", AgentId("re", "Live_In"), 0.8)),
                 decided(RelationClaim(reagan, dixon, "Live_In", AgentId("re", "Live_In"), 0.6))]
    gap = delta(entities, relations)
    assert gap.missing == (illinois,) and gap.mismatched == ((dixon_org, dixon),) and gap.ner_only == (dixon_org,)
    assert gap.as_dict()["re_only"] == ["Illinois/Loc", "Dixon/Loc"] and not gap.clean
    ents, rels, actions = align(entities, relations, gap, {illinois: Check(True, 0.8), dixon: Check(True, 0.7)})
    assert {d.claim.arg for d in ents} == {reagan, illinois, dixon}
    assert [a["action"] for a in actions] == ["added", "retyped"] and len(rels) == 2
    assert delta(ents, rels).clean
    ents, rels, actions = align(entities, relations, gap, {illinois: Check(False, 0.9)})
    assert rels == [] and {d.claim.arg for d in ents} == {reagan, dixon_org}
    assert [a["action"] for a in actions] == ["dropped_relation", "dropped_relation"]
