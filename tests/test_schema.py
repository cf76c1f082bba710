"""The shared record format (`ie.schema`): valid records round-trip, a malformed line names file, line and field."""
import json

import pytest

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
