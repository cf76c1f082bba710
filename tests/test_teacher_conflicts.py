"""`teacher.conflicts`, pure: where the type agents disagree (label, boundary and relation conflicts)."""

from ie.claims import AgentId, Arg, RelationClaim
from ie.config import load_config, resolve_config_path
from teacher.conflicts import entity_conflicts, option_letters, parse_letter, relation_conflicts
from tests.hand_claims import ent

SCHEMA = load_config(resolve_config_path("conll04")).task_schema


def test_label_and_boundary_conflicts_are_separate_and_repeats_debated_once():
    text = "Washington met Washington Post editors in Washington ."
    claims = [ent("Washington", 0, "Peop"), ent("Washington", 0, "Loc"), ent("Washington", 42, "Loc"),
              ent("Washington", 42, "Peop"), ent("Washington Post", 15, "Org"), ent("Washington", 15, "Loc"),
              ent("editors", 31, "Other")]
    assert text[15:30] == "Washington Post"
    free, conflicts = entity_conflicts(claims)
    assert [c.arg.text for c in free] == ["editors"]
    kinds = sorted((c.kind, [o.label for o in c.options]) for c in conflicts)
    assert kinds == [("boundary", ['"Washington Post" is Org', '"Washington" is Loc']),
                     ("label", ['"Washington" is Loc', '"Washington" is Peop'])]
    label = next(c for c in conflicts if c.kind == "label")
    assert all(len(o.claims) == 2 for o in label.options)  # both occurrences, one debate
    assert label.agents == (AgentId("ner", "Loc"), AgentId("ner", "Peop"))
    _, nested = entity_conflicts(claims, nested=True)
    assert [c.kind for c in nested] == ["label"]
    # the grammar's letters: the most options any conflict asked has, and N only for an answer that may reject all
    three = label.__class__(id="x", kind="label", options=label.options + label.options[:1])
    assert option_letters(conflicts, none=False) == "AB" and option_letters([label, three], none=True) == "ABCN"


def test_relation_conflicts_need_exclusive_types_on_one_pair():
    a, b = Arg(0, 4, "Peop", "John"), Arg(14, 17, "Loc", "Rome")
    live_in, work_for = AgentId("re", "Live_In"), AgentId("re", "Work_For")
    claims = [RelationClaim(a, b, "Live_In", live_in, 0.8), RelationClaim(a, b, "Work_For", work_for, 0.4),
              RelationClaim(b, a, "Live_In", live_in, 0.3)]
    free, conflicts = relation_conflicts(claims, SCHEMA)
    assert len(free) == 1 and free[0].head == b
    assert [o.label for o in conflicts[0].options] == ['"John" Live_In "Rome"', '"John" Work_For "Rome"']
    assert parse_letter("b", 2) == 1 and parse_letter("N", 2) is None and parse_letter("Z", 2) is False
