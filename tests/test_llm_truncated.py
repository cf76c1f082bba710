"""Salvaging cut-off answers: complete items kept, open brackets closed, nothing invented."""
import json

from ie.llm.truncated import salvage


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
