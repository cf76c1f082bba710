"""Salvaging cut-off answers: complete items kept, open brackets closed, nothing invented."""
import json

from ie.llm.truncated import salvage_candidates


def salvage(raw: str) -> str | None:
    """The longest closed prefix, what the client tries first."""
    candidates = salvage_candidates(raw)
    return candidates[0] if candidates else None


def test_cut_inside_an_item_keeps_the_complete_ones():
    raw = '{"items": [{"text": "Bird", "confidence": 0.9}, {"text": "NB'
    assert json.loads(salvage(raw)) == {"items": [{"text": "Bird", "confidence": 0.9}]}


def test_cut_right_after_the_array_opens_gives_an_empty_list():
    assert json.loads(salvage('{"items": [{"te')) == {"items": []}


def test_brackets_and_quotes_inside_strings_do_not_count():
    raw = '{"items": [{"text": "a ] } [ \\" b", "c": 1}, {"text": "x'
    assert json.loads(salvage(raw)) == {"items": [{"text": 'a ] } [ " b', "c": 1}]}


def test_nested_lists_close_in_order():
    raw = '{"a": [{"b": [1, 2], "c": [{"d": 1}, {"d": '
    assert json.loads(salvage(raw)) == {"a": [{"b": [1, 2], "c": [{"d": 1}]}]}


def test_complete_or_arrayless_or_mismatched_text_is_not_salvaged():
    assert salvage('{"items": []}') is None
    assert salvage('{"label": "Lo') is None
    assert salvage('{"items": [}') is None


def test_string_items_are_complete_items():
    assert json.loads(salvage('{"entities": {"Peop": ["Dole", "Rea')) == {"entities": {"Peop": ["Dole"]}}


def test_an_item_cut_inside_falls_back_to_the_longest_valid_prefix():
    """The student's items are fixed-length lists ([head, type, tail]): `[]` or `["c"]` is no relation, so the
    client takes the next shorter prefix that its answer model accepts."""
    from ie.config import load_config, resolve_config_path
    from ie.llm.client import _salvaged
    from ie.student_format import answer_model

    raw = '{"entities":[["a","Peop"],["c","Peop"],["b","Loc"]],"relations":[["a","Live_In","b"],["c'
    candidates = [json.loads(c)["relations"] for c in salvage_candidates(raw)[:2]]
    assert candidates == [[["a", "Live_In", "b"], []], [["a", "Live_In", "b"]]]  # "c is cut inside: not an item
    model = answer_model(load_config(resolve_config_path("conll04")).task_schema)
    salvaged = _salvaged(raw, model).model_dump(by_alias=True)
    assert salvaged["relations"] == [("a", "Live_In", "b")] and len(salvaged["entities"]) == 3
