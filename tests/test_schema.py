"""The shared record format and dataset configs: valid data loads, malformed data names file, line and field."""
import json
from pathlib import Path

import pytest

from ie.config import (
    CONFIGS_DIR,
    ConfigError,
    ScoreOptions,
    load_config,
    resolve_config_path,
    score_options,
    words_of_name,
)
from ie.schema import Record, RecordFormatError, append_record, read_records, write_records

TEXT = "Reagan lives in America ."


def good():
    return {"id": "s1", "text": TEXT,
            "entities": [{"start": 0, "end": 6, "type": "Peop", "text": "Reagan", "confidence": 0.9},
                         {"start": 16, "end": 23, "type": "Loc", "text": "America"}],
            "relations": [{"head": 0, "tail": 1, "type": "Live_In"}], "tokens": TEXT.split()}


def write_lines(path, objs):
    path.write_text("\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs) + "\n")


def test_round_trip_keeps_extra_keys(tmp_path):
    rec = Record.model_validate(good())
    write_records(tmp_path / "r.jsonl", [rec])
    append_record(tmp_path / "r.jsonl", rec)
    back = read_records(tmp_path / "r.jsonl")
    assert back == [rec, rec] and back[0].tokens == TEXT.split()
    assert back[0].triples()[0][0].text == "Reagan"
    assert back[0].unlabelled().entities == [] and back[0].unlabelled().tokens == TEXT.split()


@pytest.mark.parametrize("mutate, field", [
    (lambda o: o["entities"][0].update(end=99), "entities[0]"),
    (lambda o: o["entities"][1].update(text="Americas"), "entities[1].text"),
    (lambda o: o["relations"][0].update(tail=5), "relations[0].tail"),
    (lambda o: o["entities"][0].update(confidence=1.5), "entities.0.confidence"),
    (lambda o: o.pop("text"), "text"),
])
def test_malformed_line_names_file_line_and_field(tmp_path, mutate, field):
    bad = good()
    mutate(bad)
    path = tmp_path / "bad.jsonl"
    write_lines(path, [good(), "", bad])
    with pytest.raises(RecordFormatError) as err:
        read_records(path)
    assert err.value.line == 3 and err.value.field == field
    assert str(err.value).startswith(f"{path}:3: field '{field}'")


def test_invalid_json_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    write_lines(path, [good(), "{not json"])
    with pytest.raises(RecordFormatError, match=r"bad.jsonl:2: field '<json>': invalid JSON"):
        read_records(path)


def test_conll04_config_schema():
    cfg = load_config(resolve_config_path("conll04"))
    schema = cfg.task_schema
    assert set(schema.entity_types) == {"Peop", "Loc", "Org", "Other"}
    assert schema.relation_types["Live_In"].allows("Peop", "Loc")
    assert not schema.relation_types["Live_In"].allows("Org", "Loc")
    assert schema.exclusive("Live_In", "Work_For") and not schema.exclusive("Kill", "Kill")
    assert schema.statement("Live_In", "Reagan", "America") == "Reagan lives in America"


def test_config_errors_name_the_field(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nformat: spert\nschema:\n  entity_types: {A: {description: a}}\n"
                    "  relation_types: {R: {description: r, head: [B]}}\n")
    with pytest.raises(ConfigError, match=r"c.yaml: field 'schema': .*relation_types.R.head: unknown entity type 'B'"):
        load_config(path)
    with pytest.raises(ConfigError, match="no such config file"):
        resolve_config_path("nope")


def test_shipped_configs_are_found_from_any_folder(tmp_path, monkeypatch):
    """An installed package has no repository around it: names and `configs/...` paths resolve inside it."""
    monkeypatch.chdir(tmp_path)
    shipped = CONFIGS_DIR / "conll04.yaml"
    assert CONFIGS_DIR.parent.name == "ie" and shipped.is_file()
    assert resolve_config_path("conll04") == resolve_config_path("configs/conll04.yaml") == shipped
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "conll04.yaml").write_text("name: mine\n")
    assert resolve_config_path("configs/conll04.yaml") == Path("configs/conll04.yaml")  # a file here comes first
    with pytest.raises(ConfigError, match="configs/nope.yaml: no such config file"):
        resolve_config_path("configs/nope.yaml")


def test_score_options_come_from_the_config_and_flags_override_them(tmp_path):
    nyt = load_config(resolve_config_path("nyt"))
    assert score_options(nyt) == ScoreOptions(re_mode="strings")
    assert score_options(nyt, re_mode="strict", symmetric=None).re_mode == "strict"
    assert score_options(None) == ScoreOptions() and score_options(load_config(resolve_config_path("semeval"))).semeval
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nformat: spert\nschema: {entity_types: {A: {description: a}}}\nscore: {re_mod: x}\n")
    with pytest.raises(ConfigError, match=r"c.yaml: field 'score.re_mod'"):
        load_config(path)


def test_type_words_default_to_the_words_of_the_type_name():
    assert words_of_name("OtherScientificTerm") == ["other scientific term"]
    assert [words_of_name(n)[0] for n in ("PER", "Used-for", "Live_In", "HTTPServer")] == [
        "per", "used for", "live in", "http server"]
