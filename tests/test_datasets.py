"""Dataset loaders: published counts on the real benchmark files, format details, and errors naming file:line:field."""
import json

import pytest

from ie.config import data_root, load_config, resolve_config_path
from ie.datasets import LOADERS, dygie, load_input, load_split, nyt, spert
from ie.datasets import __main__ as datasets_cli
from ie.datasets.stats import split_stats
from ie.schema import RecordFormatError

needs_data = pytest.mark.skipif(not data_root().exists(), reason=f"benchmark data root {data_root()} is missing")


# CoNLL04's published test split has 288 records (1079 entities, 422 relations); ../shared/data keeps its first 150.
PUBLISHED_OR_SHARED_TEST = (288, 150)


def split(name, split_name):
    return load_split(load_config(resolve_config_path(name)), split_name)


@needs_data
def test_conll04_test_counts_and_offsets():
    records = split("conll04", "test")
    assert len(records) in PUBLISHED_OR_SHARED_TEST
    stats = split_stats(records[:150])
    assert (stats.records, stats.entities, stats.relations) == (150, 556, 254)
    assert stats.entity_types == {"Loc": 257, "Peop": 126, "Org": 105, "Other": 68}
    rec = records[1]
    assert rec.id == "conll04-test-1" and rec.text == "PERUGIA , Italy ( AP )" and rec.meta == {"orig_id": 23}
    assert [(e.text, e.type) for e in rec.entities] == [("PERUGIA", "Loc"), ("Italy", "Loc"), ("AP", "Org")]
    assert [(h.text, r, t.text) for h, r, t in rec.triples()][1] == ("AP", "OrgBased_In", "PERUGIA")
    assert rec.text == " ".join(rec.tokens)


@needs_data
def test_conll2003_test_counts_skip_docstart():
    stats = split_stats(split("conll2003", "test"))
    assert (stats.records, stats.entities, stats.relations) == (3453, 5648, 0)
    assert stats.entity_types == {"LOC": 1668, "ORG": 1661, "PER": 1617, "MISC": 702}


def test_conll_iob_spans_and_bad_tag(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("-DOCSTART- -X- -X- O\n\nNew NNP B-NP B-LOC\nYork NNP I-NP I-LOC\nAcme NNP B-NP I-ORG\n"
                    "x NN O O\nBo NNP B-NP B-PER\nAl NNP B-NP B-PER\n")
    [rec] = LOADERS["conll"](path, "t")
    assert [(e.text, e.type) for e in rec.entities] == [("New York", "LOC"), ("Acme", "ORG"), ("Bo", "PER"),
                                                         ("Al", "PER")]
    path.write_text("a NN O O\nb NN O X-LOC\n")
    with pytest.raises(RecordFormatError, match=r"t\.txt:2: field 'NER'"):
        LOADERS["conll"](path, "t")


@needs_data
def test_scierc_dygie_equals_spert_on_dev():
    root = data_root() / "scierc"
    from_dygie = dygie.load(root / "dev.json", "scierc-dev")
    from_spert = spert.load(root / "scierc_joint_er_dev.json", "scierc-dev")
    for records in (from_dygie, from_spert):
        stats = split_stats(records)
        assert (stats.records, stats.entities, stats.relations) == (275, 811, 455)
    for a, b in zip(from_dygie, from_spert):
        assert (a.id, a.text) == (b.id, b.text)  # PTB escapes (-LRB-) are turned back into brackets
        assert {e.key for e in a.entities} == {e.key for e in b.entities}
        assert {(h.key, r, t.key) for h, r, t in a.triples()} == {(h.key, r.upper(), t.key) for h, r, t in b.triples()}
    assert from_dygie[0].meta == {"doc_key": from_dygie[0].meta["doc_key"], "sentence": 0}


@needs_data
def test_scierc_config_is_nested():
    config = load_config(resolve_config_path("scierc"))
    assert config.task_schema.nested_entities and "test" not in config.splits
    assert split_stats(load_split(config, "dev")).records == 275


@needs_data
def test_nyt_dev_counts_and_grounding():
    records = split("nyt", "dev")
    stats = split_stats(records)
    # 7985 triples: 7943 grounded relations + 42 whose string is absent (Freebase diacritics), kept in meta.
    assert (stats.records, stats.relations, stats.ungrounded_triples) == (5000, 7943, 42)
    assert set(stats.entity_types) == {"Entity"}
    ungrounded = [t for r in records for t in r.meta["ungrounded_triples"]]
    assert ["Paraguay", "/location/country/capital", "Asunción"] in ungrounded
    head, relation, tail = records[0].triples()[0]
    assert (head.text, relation, tail.text) == ("Queens", "/location/location/contains", "Douglaston")


def test_nyt_grounding_prefers_word_boundaries():
    assert nyt.ground("Iraqi troops left Iraq", "Iraq") == ((18, 22), True)
    assert nyt.ground("Iraqi troops", "Iraq") == ((0, 4), False)
    assert nyt.ground("Cancun", "Cancún") == (None, False)


def test_nyt_record_keeps_ungrounded_and_substring_matches(tmp_path):
    path = tmp_path / "n.json"
    path.write_text(json.dumps([{"text": "Iraqi troops in Cancun .", "triple_list": [
        ["Iraq", "/r/a", "Cancun"], ["Iraq", "/r/b", "Cancún"]]}], indent=2))
    [rec] = LOADERS["nyt"](path, "n")
    assert [(h.text, r, t.text) for h, r, t in rec.triples()] == [("Iraq", "/r/a", "Cancun")]
    assert rec.meta == {"ungrounded_triples": [["Iraq", "/r/b", "Cancún"]], "substring_grounded": ["Iraq"]}
    assert split_stats([rec]).ungrounded_triples == 1


@needs_data
def test_semeval_test_counts_and_direction():
    records = {r.id: r for r in split("semeval", "test")}
    assert len(records) == 2717
    rec = records["semeval-test-8005"]  # Cause-Effect(e2,e1): e2 "virus" is the cause
    assert rec.text.startswith("Avian influenza is") and "<e" not in rec.text
    assert [(h.text, r, t.text) for h, r, t in rec.triples()] == [("virus", "Cause-Effect", "influenza")]
    assert rec.meta["label"] == "Cause-Effect(e2,e1)"
    other = [r for r in records.values() if r.meta["label"] == "Other"]
    assert len(other) == 454 and all(not r.relations and len(r.entities) == 2 for r in other)


def test_malformed_jsonl_names_file_line_and_field(tmp_path):
    path = tmp_path / "in.jsonl"
    good = {"id": "a", "text": "Bo runs", "entities": [{"start": 0, "end": 2, "type": "PER", "text": "Bo"}]}
    bad = {**good, "entities": [{"start": 0, "end": 2, "type": "PER", "text": "Bx"}]}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(RecordFormatError) as err:
        load_input(path)
    assert (err.value.line, err.value.field) == (3, "entities[0].text") and str(path) in str(err.value)


def test_malformed_spert_names_record_field(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(json.dumps([{"tokens": ["a", "b"], "entities": [{"type": "X", "start": 0, "end": 1}],
                                 "relations": [{"type": "R", "head": 0, "tail": 3}]}]))
    with pytest.raises(RecordFormatError, match=r"in\.json:1: field '\[0\]\.relations\[0\]\.tail'"):
        load_input(path)


def test_plain_text_input(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("Reagan lives in America .\n\n  Bo works for Acme.  \n")
    records = load_input(path)
    assert [(r.id, r.text, r.meta["line"]) for r in records] == [
        ("mine-0", "Reagan lives in America .", 1), ("mine-1", "Bo works for Acme.", 3)]
    assert all(not r.entities for r in records)


@pytest.mark.parametrize(("name", "data", "where"), [
    ("blob.txt", b"a line\n\x89PNG\r\n\x1a\n", ":2: field '<text>': byte 0x89 at column 1"),
    ("nul.txt", b"a line\nanother\nbad\x00line\n", ":3: field '<text>': byte 0x00 at column 4"),
    ("blob.jsonl", b'{"id": "a", "text": "x"}\n{"id": "b", "text": "\xff"}\n', ":2: field '<text>': byte 0xff"),
    ("blob.json", b'[\n  {"tokens": ["\xc3"]}\n]', ":2: field '<text>': byte 0xc3 at column 16"),
])
def test_a_binary_input_names_the_file_and_line(tmp_path, name, data, where):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(RecordFormatError, match="not UTF-8 text") as info:
        load_input(path)
    assert str(info.value).startswith(f"{path}{where}")


def test_repeated_ids_in_a_record_input_are_refused_naming_both_lines(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"id": "x", "text": "a"}\n\n{"id": "y", "text": "b"}\n{"id": "x", "text": "c"}\n')
    with pytest.raises(RecordFormatError, match=r"dup.jsonl:4: field 'id': 'x' repeats the id of line 1"):
        load_input(path)


def test_unknown_extension(tmp_path):
    with pytest.raises(ValueError, match="unknown input extension"):
        load_input(tmp_path / "x.csv")


@needs_data
def test_cli_stats_and_export(tmp_path, capsys):
    assert datasets_cli.main(["stats", "conll04", "--split", "test"]) == 0
    printed = capsys.readouterr().out
    assert any(f"conll04 test: {counts}" in printed for counts in ("288 records, 1079 entities, 422 relations",
                                                                    "150 records, 556 entities, 254 relations"))
    out = tmp_path / "c.jsonl"
    assert datasets_cli.main(["export", "conll2003", "--split", "test", "--out", str(out)]) == 0
    assert len(load_input(out)) == 3453
    assert datasets_cli.main(["export", "conll2003", "--split", "test", "--limit", "5", "--out", str(out)]) == 0
    assert [r.id for r in load_input(out)] == [r.id for r in load_split(load_config(resolve_config_path("conll2003")), "test")[:5]]
    test = load_split(load_config(resolve_config_path("conll2003")), "test")
    assert datasets_cli.main(["export", "conll2003", "--split", "test", "--offset", "5", "--limit", "3",
                              "--out", str(out)]) == 0
    assert [r.id for r in load_input(out)] == [r.id for r in test[5:8]]
    assert datasets_cli.main(["stats", "conll04", "--split", "nope"]) == 1


@needs_data
def test_the_whole_test_split_loads_and_any_slice_of_it_exports(tmp_path):
    from ie.datasets import load_slice

    config = load_config(resolve_config_path("conll04"))
    whole = load_split(config, "test")
    assert "held_out" not in type(config).model_fields and load_slice(config, "test") == whole
    assert load_slice(config, "test", 140, 20) == whole[140:160]
    out = tmp_path / "t.jsonl"
    assert datasets_cli.main(["export", "conll04", "--split", "test", "--offset", "149", "--out", str(out)]) == 0
    assert [r.id for r in load_input(out)] == [r.id for r in whole[149:]]
