"""`teacher.baselines` on a scripted LLM: direct-re's entities are its triples' arguments, and one-step on a
schema without relations is direct."""
from ie.config import load_config, resolve_config_path
from tests.teacher_script import DIXON, Script, entities, label, relations


def test_direct_re_takes_its_entities_from_the_triples_and_one_step_without_relations_is_direct():
    script = Script({"TripletAnswer": {"triples": [{"head": "Reagan", "head_type": "Peop", "relation": "Live_In",
                                                    "tail": "Dixon", "tail_type": "Loc", "confidence": 0.9}]}})
    out = label(script, DIXON, method="direct-re")
    assert entities(out) == [("Reagan", "Peop"), ("Dixon", "Loc")] and relations(out) == [("Reagan", "Live_In", "Dixon")]
    assert script.roles(out) == [("direct_re", "direct-re")]
    conll2003 = load_config(resolve_config_path("conll2003")).task_schema
    script = Script({"DirectAnswer": {"entities": [{"text": "Reagan", "type": "PER", "confidence": 0.9}]}})
    out = label(script, DIXON, method="one-step", schema=conll2003)
    assert entities(out) == [("Reagan", "PER")] and script.roles(out) == [("direct", "direct")]
