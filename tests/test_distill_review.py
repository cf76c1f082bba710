"""Review in Label Studio (`distill.review`, `python -m distill review`): tasks with the teacher's labels as
pre-annotations, the labelling config, the real Label Studio's export read back, and `python -m distill
--reviewed` trusting a reviewed record over the teacher's.

`label_studio_export.json` is what Label Studio 1.23.2 (PyPI, on 127.0.0.1) exported (GET
/api/projects/1/export?exportType=JSON) after, through its REST API: a project created with the config `review
export` wrote for two records (`debate_record.PREDICTED` and one more), their tasks imported with the teacher's
predictions, and rec-1's task annotated as a reviewer would (NASA retyped Org, the spurious 'flew' dropped, the
missed Houston added, the relation kept). The export holds the annotated task only (Label Studio's default)."""
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from distill.__main__ import main as distill_main
from distill.review import ReviewError, apply_reviewed, label_config, parse_export, reviewed_records, sample, task
from ie.config import DATA_ENV, load_config, resolve_config_path
from ie.records import LabelledRecord
from ie.schema import read_records, write_records
from tests.debate_record import PREDICTED
from tests.distill_records import SCHEMA, teacher_records

EXPORT = Path(__file__).parent / "label_studio_export.json"
CONLL04 = load_config(resolve_config_path("conll04")).task_schema


def test_the_labelling_config_holds_the_schema_s_types():
    view = ET.fromstring(label_config(CONLL04))
    assert [x.get("value") for x in view.find("Labels")] == ["Peop", "Loc", "Org", "Other"]
    assert [x.get("value") for x in view.find("Relations")] == list(CONLL04.relation_types)
    assert view.find("Labels").get("toName") == view.find("Text").get("name") == "text"


def test_a_task_carries_the_teacher_s_labels_as_a_scored_prediction():
    t = task(PREDICTED, "crossagentie").model_dump(mode="json", exclude_none=True)
    assert t["data"] == {"text": PREDICTED.text, "record_id": "rec-1"}
    [prediction] = t["predictions"]
    assert (prediction["model_version"], prediction["score"]) == ("crossagentie", 0.71)
    regions = [r for r in prediction["result"] if r["type"] == "labels"]
    assert [(r["id"], r["value"]["text"], r["value"]["labels"], r["score"]) for r in regions] == [
        ("e0", "Jake Garn", ["Peop"], 0.86), ("e1", "NASA", ["Loc"], 0.55), ("e2", "flew", ["Other"], 0.4)]
    assert [r for r in prediction["result"] if r["type"] == "relation"] == [
        {"type": "relation", "from_id": "e0", "to_id": "e1", "direction": "right", "labels": ["Work_For"]}]


def test_a_sample_takes_the_least_confident_records_or_a_seeded_random_few():
    records = teacher_records()
    assert [r.id for r in sample(records, 2, lowest_confidence=True)] == ["train-0", "train-1"]
    assert sample(records, 3, False, seed=1) == sample(records, 3, False, seed=1) != records[:3]
    assert sample(records, None, True) == records


def test_the_real_label_studio_export_reads_back_as_reviewed_records():
    tasks = parse_export(json.loads(EXPORT.read_text()), EXPORT)
    [reviewed] = reviewed_records(tasks, EXPORT)
    assert (reviewed.id, reviewed.text) == ("rec-1", PREDICTED.text)
    assert [(e.text, e.type) for e in reviewed.entities] == [("Jake Garn", "Peop"), ("NASA", "Org"), ("Houston", "Loc")]
    assert [(reviewed.entities[r.head].text, r.type, reviewed.entities[r.tail].text) for r in reviewed.relations] == [
        ("Jake Garn", "Work_For", "NASA")]


def test_an_export_whose_region_is_not_its_text_is_refused_naming_the_task():
    data = json.loads(EXPORT.read_text())
    annotated = next(t for t in data if t["annotations"])
    annotated["annotations"][-1]["result"][0]["value"]["start"] += 1
    with pytest.raises(ReviewError, match=rf"task {annotated['id']} \(record 'rec-1'\).*is not the text at"):
        reviewed_records(parse_export(data, "x.json"), "x.json")


def _reviewed(record_id: str, text: str, type_: str = "Loc") -> LabelledRecord:
    return LabelledRecord(id=record_id, text=text,
                  entities=[{"start": 0, "end": 3, "type": type_, "text": text[:3], "confidence": 1.0}])


@pytest.mark.parametrize("reviewed, error", [
    (_reviewed("train-0", "Ann lives in Town9 ."), "reviewed record 'train-0': its text is no longer the run's"),
    (_reviewed("gone", "Ann lives in Town0 ."), "reviewed record 'gone' is not in the teacher run"),
    (_reviewed("train-0", "Ann lives in Town0 .", "Org"), r"types \['Org'\] are not in the schema")])
def test_a_reviewed_record_that_does_not_fit_the_run_is_refused_naming_it(reviewed, error):
    with pytest.raises(ReviewError, match=error):
        apply_reviewed(teacher_records(), [reviewed], SCHEMA, "reviewed.jsonl")


def test_a_reviewed_record_changes_what_distill_writes(tmp_path, monkeypatch, capsys):
    # train-0 is the teacher's least confident record (0.52 < threshold 0.6): screened out, unless reviewed.
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    write_records(tmp_path / "teacher" / "predictions.jsonl", teacher_records())
    config = tmp_path / "toy.yaml"
    config.write_text(json.dumps({"name": "toy", "format": "records", "schema": json.loads(SCHEMA.model_dump_json()),
                                  "distill": {"threshold": 0.6, "exclude_splits": []}}))
    corrected = teacher_records()[0].model_copy(update={"relations": []})  # a person removed the relation
    write_records(tmp_path / "reviewed.jsonl", [corrected])
    argv = ["--teacher", str(tmp_path / "teacher"), "--config", str(config), "--sweep-per-type", "all"]
    assert distill_main([*argv, "--out", str(tmp_path / "plain")]) == 0
    assert distill_main([*argv, "--out", str(tmp_path / "reviewed"), "--reviewed", str(tmp_path / "reviewed.jsonl")]) == 0
    assert f"reviewed: 1 records of {tmp_path / 'reviewed.jsonl'} replace the teacher's" in capsys.readouterr().out
    plain, reviewed = (json.loads((tmp_path / d / "per_type_all" / "manifest.json").read_text())["selection"]
                       for d in ("plain", "reviewed"))
    chosen = [{i for ids in s["chosen_ids"].values() for i in ids} for s in (plain, reviewed)]
    assert "train-0" not in chosen[0] and "train-0" in chosen[1]
    rows = [json.loads(line) for f in ("train.jsonl", "validation.jsonl")
            for line in (tmp_path / "reviewed" / "per_type_all" / f).read_text().splitlines()]
    assert any("Ann lives in Town0 ." in json.dumps(row) for row in rows)


def test_review_export_and_import_on_the_command_line(tmp_path, capsys):
    run = tmp_path / "run"
    write_records(run / "predictions.jsonl", [PREDICTED])
    (run / "config.json").write_text(json.dumps({"config": "conll04", "method": "crossagentie"}))
    assert distill_main(["review", "export", str(run), "--out", str(tmp_path / "tasks.json")]) == 0
    assert json.loads((tmp_path / "tasks.json").read_text())[0]["data"]["record_id"] == "rec-1"
    assert ET.fromstring((tmp_path / "tasks.xml").read_text()).tag == "View"
    assert '"proposed_by"' in (tmp_path / "tasks.html").read_text()  # the queue, with the teacher's debates
    assert distill_main(["review", "import", str(EXPORT), "--out", str(tmp_path / "reviewed.jsonl")]) == 0
    assert [r.id for r in read_records(tmp_path / "reviewed.jsonl")] == ["rec-1"]
    assert "1 reviewed records (of 1 tasks" in capsys.readouterr().out
