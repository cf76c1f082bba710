"""`python -m distill`: held-out records excluded by id and text, sweeps, and the errors that stop it."""
import json
from pathlib import Path

import pytest

from distill.__main__ import main
from ie.config import DATA_ENV
from ie.schema import Record, write_records
from tests.distill_records import SCHEMA, teacher_records


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
            "--re-per-type", "2", "--sweep-per-type", "1,3,all"]
    assert main(argv) == 0
    manifests = {k: json.loads((tmp_path / "out" / folder / "manifest.json").read_text())
                 for k, folder in (("1", "per_type1"), ("3", "per_type3"), ("all", "per_type_all"))}
    for k, manifest in manifests.items():
        assert manifest["per_type"] == k and manifest["settings"]["sweep_per_type"] == []
        assert manifest["screening"]["reasons"] == {"excluded": 3}
        assert manifest["sources"]["excluded_records"] == {"split:dev": 2, str(tmp_path / "held_out.jsonl"): 1}
        chosen = {i for ids in manifest["selection"]["chosen_ids"].values() for i in ids}
        assert chosen.isdisjoint({"train-13", "train-8", "train-0"})
    # k per entity type, min(k, re_per_type 2) per relation type; every record has one of each type
    settings = {k: (m["settings"]["ner_per_type"], m["settings"]["re_per_type"]) for k, m in manifests.items()}
    assert settings == {"1": (1, 1), "3": (3, 2), "all": (None, None)}
    assert manifests["1"]["selection"]["chosen_per_type"] == {"entity:Peop": 1, "entity:Loc": 1, "relation:Live_In": 1}
    assert manifests["3"]["selection"]["chosen_per_type"] == {"entity:Peop": 3, "entity:Loc": 3, "relation:Live_In": 2}
    # all: every one of the 11 records that pass, still split into train and validation
    every = manifests["all"]["selection"]
    assert (every["records"], every["train"], every["validation"]) == (11, 10, 1)
    assert every["chosen_per_type"] == {"entity:Peop": 11, "entity:Loc": 11, "relation:Live_In": 11}
    assert "per_type_all" in capsys.readouterr().out


def test_cli_without_a_sweep_writes_one_folder_at_no_point(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    write_records(tmp_path / "teacher" / "predictions.jsonl", teacher_records())
    assert main(["--teacher", str(tmp_path / "teacher"), "--config", str(_dataset_config(tmp_path)),
                 "--out", str(tmp_path / "out"), "--ner-per-type", "2"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["per_type"] is None
    assert (manifest["settings"]["ner_per_type"], manifest["settings"]["re_per_type"]) == (2, 1)


def test_cli_stops_when_nothing_passes(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    write_records(tmp_path / "teacher" / "predictions.jsonl", teacher_records(3))
    with pytest.raises(SystemExit, match=r"no record passed screening \({'low_confidence': 3}\)"):
        main(["--teacher", str(tmp_path / "teacher"), "--config", str(_dataset_config(tmp_path)),
              "--out", str(tmp_path / "out"), "--threshold", "0.99"])


def test_cli_reports_missing_teacher_folder(tmp_path):
    with pytest.raises(SystemExit, match="predictions.jsonl: not found"):
        main(["--teacher", str(tmp_path), "--config", "conll04", "--out", str(tmp_path / "o")])
