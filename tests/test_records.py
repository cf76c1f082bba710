"""ie.records: the labelled record every stage reads; the saved runs of `results/` (written before it was typed)
load as it, and a line of an unknown older layout is refused naming the file, the line, the field and the fix."""
import gzip
import json

import pytest

from ie.config import REPO_ROOT
from ie.records import LabelledRecord, Transcript, read_labelled
from ie.schema import RecordFormatError, record_line


def without_none(obj):
    """`obj` with no None value at any depth: a null field is written as no field now."""
    if isinstance(obj, dict):
        return {k: without_none(v) for k, v in obj.items() if v is not None}
    return [without_none(x) for x in obj] if isinstance(obj, list) else obj


def test_every_saved_run_loads_typed_and_writes_back_the_same_json(tmp_path):
    files = sorted((REPO_ROOT / "results").glob("*/*.jsonl.gz"))
    assert files
    debates = 0
    for path in files:
        plain = tmp_path / path.name.removesuffix(".gz")
        plain.write_bytes(gzip.open(path).read())
        for line, record in zip(plain.read_text(encoding="utf-8").splitlines(), read_labelled(plain), strict=True):
            debates += record.debate is not None
            original = json.loads(line)
            if original.get("debate", {}).get("routing") == {}:  # not routed: now no routing
                del original["debate"]["routing"]
            written = json.loads(record_line(record))
            assert without_none(written) == without_none(original), f"{path}: {record.id}"
    assert debates


def test_a_record_of_an_unknown_older_layout_is_refused_naming_line_field_and_fix(tmp_path):
    path = tmp_path / "predictions.jsonl"
    good = LabelledRecord(id="a", text="Bo runs .", debate=Transcript(method="direct"), confidence=0.5)
    path.write_text(record_line(good) + "\n" + json.dumps({"id": "b", "text": "x", "debate": ["turn 1"]}) + "\n")
    with pytest.raises(RecordFormatError, match=r"predictions.jsonl:2: field 'debate': .*label it again"):
        read_labelled(path)


def test_typed_fields_read_as_attributes_and_unset_stats_are_not_written():
    record = LabelledRecord.model_validate({"id": "a", "text": "Bo", "stats": {"calls": 2}, "debate": {
        "method": "crossagentie", "alignment": [{"round": 1, "before": {"re_only": ["Bo/Peop"]}, "after": {},
                                                 "actions": [{"action": "retyped", "entity": "Bo", "from": "Loc",
                                                              "type": "Peop"}]}]}})
    assert record.stats.calls == 2 and record.stats.failed_calls == 0 and record.confidence is None
    [action] = record.debate.alignment[0].actions
    assert action.from_type == "Loc" and record.debate.alignment[0].before.re_only == ["Bo/Peop"]
    written = json.loads(record_line(record))
    assert written["stats"] == {"calls": 2} and written["debate"]["alignment"][0]["actions"][0]["from"] == "Loc"
    assert "stats" not in json.loads(record_line(LabelledRecord(id="b", text="x")))
