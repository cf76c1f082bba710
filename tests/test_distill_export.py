import json
from pathlib import Path

import pytest
from datasets import load_from_disk

from distill.__main__ import main
from distill.config import DistillConfig, DistillConfigError
from distill.export import export, split_records
from distill.select import screen, select
from ie.cli import from_sources
from ie.config import DATA_ENV, ConfigError, TaskSchema
from ie.schema import Entity, Record, Relation, read_records, write_records
from ie.student_format import build_messages, template_sha256

SCHEMA = TaskSchema.model_validate({
    "entity_types": {"Peop": {"description": "person"}, "Loc": {"description": "place"}},
    "relation_types": {"Live_In": {"description": "lives in", "head": ["Peop"], "tail": ["Loc"]}},
})
NAMES = ["Ann", "Bob", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ida", "Jo", "Kim", "Lu", "Max", "Ned"]


def teacher_records(n: int = 14) -> list[Record]:
    out = []
    for i in range(n):
        person, place = NAMES[i], f"Town{i}"
        text = f"{person} lives in {place} ."
        ents = [Entity(start=0, end=len(person), type="Peop", text=person, confidence=0.9),
                Entity(start=len(person) + 10, end=len(person) + 10 + len(place), type="Loc", text=place,
                       confidence=0.9)]
        out.append(Record(id=f"train-{i}", text=text, entities=ents, confidence=0.52 + i / 30,
                          relations=[Relation(head=0, tail=1, type="Live_In", confidence=0.9)],
                          stats={"calls": 5, "failed_calls": 0, "unresolved_conflicts": 0}, debate=[{"turn": 1}]))
    return out


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


def test_config_sources_and_errors():
    def load(section, flags):
        return from_sources(DistillConfig, "distill", section, flags, "configs/x.yaml")

    cfg = load({"threshold": 0.7, "ner_per_type": 3}, {"ner_per_type": 6, "seed": None})
    assert (cfg.threshold, cfg.ner_per_type, cfg.seed) == (0.7, 6, 0)
    with pytest.raises(ConfigError, match=r"configs/x.yaml: distill.treshold: unknown setting"):
        load({"treshold": 0.7}, {})
    with pytest.raises(DistillConfigError, match=r"configs/x.yaml: distill.threshold = 1.5: must be within"):
        load({"threshold": 1.5}, {})
    with pytest.raises(ConfigError, match=r"configs/x.yaml: distill: '<=' not supported"):
        load({"threshold": "high"}, {})


def _dataset_config(tmp_path: Path) -> Path:
    """A records-format dataset whose dev split shares one id and one text with the teacher's output."""
    write_records(tmp_path / "data" / "dev.jsonl", [Record(id="train-13", text="unrelated ."),
                                                    Record(id="dev-0", text="Ida lives in Town8 .")])
    cfg = {"name": "toy", "format": "records", "splits": {"dev": "dev.jsonl"},
           "schema": json.loads(SCHEMA.model_dump_json()),
           "distill": {"threshold": 0.5, "re_per_type": 1, "validation_fraction": 0.1, "exclude_splits": ["dev"]}}
    path = tmp_path / "toy.yaml"
    path.write_text(json.dumps(cfg))
    return path


def test_cli_excludes_dev_by_id_and_text_and_sweeps(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    write_records(tmp_path / "teacher" / "predictions.jsonl", teacher_records())
    write_records(tmp_path / "held_out.jsonl", [Record(id="other", text="Ann lives in Town0 .")])
    argv = ["--teacher", str(tmp_path / "teacher"), "--config", str(_dataset_config(tmp_path)),
            "--out", str(tmp_path / "out"), "--exclude", str(tmp_path / "held_out.jsonl"),
            "--sweep-ner-per-type", "1,3"]
    assert main(argv) == 0
    for k in (1, 3):
        manifest = json.loads((tmp_path / "out" / f"ner{k}" / "manifest.json").read_text())
        assert manifest["settings"]["ner_per_type"] == k
        assert manifest["screening"]["reasons"] == {"excluded": 3}
        assert manifest["sources"]["excluded_records"] == {"split:dev": 2, str(tmp_path / "held_out.jsonl"): 1}
        chosen = {i for ids in manifest["selection"]["chosen_ids"].values() for i in ids}
        assert chosen.isdisjoint({"train-13", "train-8", "train-0"})
    assert "ner3" in capsys.readouterr().out


def test_cli_stops_when_nothing_passes(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    write_records(tmp_path / "teacher" / "predictions.jsonl", teacher_records(3))
    with pytest.raises(SystemExit, match=r"no record passed screening \({'low_confidence': 3}\)"):
        main(["--teacher", str(tmp_path / "teacher"), "--config", str(_dataset_config(tmp_path)),
              "--out", str(tmp_path / "out"), "--threshold", "0.99"])


def test_cli_reports_missing_teacher_folder(tmp_path):
    with pytest.raises(SystemExit, match="predictions.jsonl: not found"):
        main(["--teacher", str(tmp_path), "--config", "conll04", "--out", str(tmp_path / "o")])
