"""Dataset configs (`ie.config`): the schema a config gives, errors naming the file and field, score options,
type words."""

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
    with pytest.raises(ConfigError, match=r"c.yaml: field 'schema.relation_types.R.head': unknown entity type 'B'"):
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


@pytest.mark.parametrize(("edit", "error"), [
    (lambda t: t.split("schema:")[0] + "schema:\n  entity_types: {}\n",
     "field 'schema.entity_types': empty; a schema needs at least one entity type"),
    (lambda t: t.replace("    Peop:\n", '    "":\n', 1), "field 'schema.entity_types': type name '' is empty"),
    (lambda t: t.replace("    Other:\n", "    org:\n      description: an org\n    Other:\n", 1),
     "field 'schema.entity_types': type names 'Org' and 'org' differ only in case"),
    (lambda t: t.replace("    Loc:\n", "    Peop:\n", 1),
     r"c.yaml:14: invalid YAML: key 'Peop' given twice in one mapping \(the last would win silently\)"),
    (lambda t: t.replace('statement: "{head} lives in {tail}"', 'statement: "{head} paid {USD} to {tail}"'),
     r"field 'schema.relation_types.Live_In.statement': '\{head\} paid \{USD\} to \{tail\}': unknown field \{USD\}"),
    (lambda t: t.replace('statement: "{head} lives in {tail}"', 'statement: "{head} lives in {tail"'),
     "field 'schema.relation_types.Live_In.statement': .*expected '}'"),
    (lambda t: t.replace("halves_from_tokens: 90", "halves_from_token: 90"), "field 'serve.halves_from_token'"),
    (lambda t: t.replace("halves_from_tokens: 90", "halves_from_tokens: 0"), "field 'serve.halves_from_tokens'"),
])
def test_a_config_that_would_mislead_is_refused_at_load_naming_file_and_field(tmp_path, edit, error):
    text = resolve_config_path("conll04").read_text()
    path = tmp_path / "c.yaml"
    path.write_text(edit(text))
    assert path.read_text() != text
    with pytest.raises(ConfigError, match=error):
        load_config(path)


def test_a_key_given_twice_is_refused_in_every_section(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(resolve_config_path("conll04").read_text().replace("\nteacher:\n", "\nteacher:\n  seed: 1\n  seed: 2\n"))
    with pytest.raises(ConfigError, match=r"c.yaml:\d+: invalid YAML: key 'seed' given twice"):
        load_config(path)
