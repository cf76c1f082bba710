"""`distill.export`: the seeded split and the training files, dataset, OpenAI plan and manifest it writes."""
import json

from datasets import load_from_disk

from distill.config import DistillConfig
from distill.export import export, split_records
from distill.select import screen, select
from ie.schema import read_records
from ie.student_format import build_messages, template_sha256
from tests.distill_records import SCHEMA, teacher_records


def test_split_is_seeded_and_keeps_one_validation_record():
    recs = teacher_records()
    train, val = split_records(recs, 0.1, seed=3)
    assert len(val) == 1 and len(train) == 13
    assert split_records(recs, 0.1, seed=3) == (train, val)
    assert split_records(recs[:1], 0.1, seed=3) == (recs[:1], [])


def test_single_record_exports_no_validation_split(tmp_path):
    cfg = DistillConfig(threshold=0.0, ner_per_type=1, re_per_type=0)
    screening = screen(teacher_records(1), cfg.threshold)
    export(tmp_path, screening, select(screening.passed, SCHEMA, 1, 0, 0), SCHEMA, cfg, {})
    dataset = load_from_disk(str(tmp_path / "dataset"))
    assert list(dataset) == ["train"] and len(dataset["train"]) == 1
    assert (tmp_path / "validation.jsonl").read_text() == ""


def test_export_writes_messages_dataset_openai_and_manifest(tmp_path):
    cfg = DistillConfig(threshold=0.6, ner_per_type=4, re_per_type=4, validation_fraction=0.25)
    screening = screen(teacher_records(), cfg.threshold)
    selection = select(screening.passed, SCHEMA, cfg.ner_per_type, cfg.re_per_type, cfg.seed)
    manifest = export(tmp_path, screening, selection, SCHEMA, cfg, {"teacher": "runs/x/predictions.jsonl"})

    train = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    val = [json.loads(line) for line in (tmp_path / "validation.jsonl").read_text().splitlines()]
    assert len(train) + len(val) == len(selection.records) == 11 and len(val) == 3
    assert set(train[0]) == {"messages"}  # OpenAI rejects other keys; ids live in the dataset and manifest
    ids = manifest["selection"]["split_ids"]
    first = next(r for r in selection.records if r.id == ids["train"][0])
    assert train[0]["messages"][:2] == build_messages(first.text, SCHEMA)
    dataset = load_from_disk(str(tmp_path / "dataset"))
    assert set(dataset) == {"train", "validation"} and dataset["train"].column_names == ["id", "messages"]
    assert dataset["train"]["id"] == ids["train"] and dataset["validation"]["id"] == ids["validation"]
    assert dataset["train"][0]["messages"] == train[0]["messages"]
    assert [r.id for r in read_records(tmp_path / "selected.jsonl")] == [r.id for r in selection.records]
    assert "debate" not in (tmp_path / "selected.jsonl").read_text()

    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk == manifest
    assert manifest["template"]["sha256"] == template_sha256()
    assert manifest["seed"] == 0 and manifest["settings"]["threshold"] == 0.6
    assert manifest["screening"] == {"total": 14, "passed": 11, "rejected": 3, "reasons": {"low_confidence": 3}}
    assert manifest["selection"]["chosen_per_type"] == {"entity:Peop": 4, "entity:Loc": 4, "relation:Live_In": 3}
    assert manifest["selection"]["labels_per_type"] == {"entity:Loc": 11, "entity:Peop": 11, "relation:Live_In": 11}
    assert manifest["warnings"][0] == \
        "relation:Live_In: wanted 4 records, only 3 available (11 passing records contain it)"
    assert "8 examples; the API needs at least 10" in manifest["warnings"][1]
    assert not manifest["openai"]["ok"]


def test_export_plans_the_openai_job_when_valid(tmp_path):
    cfg = DistillConfig(threshold=0.0, ner_per_type=7, re_per_type=7, validation_fraction=0.1)
    screening = screen(teacher_records(), cfg.threshold)
    selection = select(screening.passed, SCHEMA, cfg.ner_per_type, cfg.re_per_type, cfg.seed)
    openai = export(tmp_path, screening, selection, SCHEMA, cfg, {})["openai"]
    assert openai["ok"] and openai["train"]["examples"] == 13 and openai["validation"]["examples"] == 1
    assert openai["billed_tokens"] == openai["train"]["tokens"] * openai["n_epochs"] > 0
