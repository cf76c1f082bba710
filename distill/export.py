"""Writes a selection as training data. One output folder holds:

- `train.jsonl`, `validation.jsonl`: `{"messages": [system, user, assistant]}` per line: TRL's and OpenAI's
  fine-tuning format alike (checked and priced with `ie.fine_tune_plan.plan_files`);
- `dataset/`: the same as a saved `datasets.DatasetDict` (splits `train` and, when not empty, `validation`;
  columns `id`, `messages`);
- `selected.jsonl`: the chosen teacher records (labels and confidences, no transcripts);
- `manifest.json`: sources, the sweep point (`per_type`: `"5"`, `"all"`, or null outside a sweep), the settings it
  ran with, screening reasons, counts per type, split ids, warnings, seed, template
  sha256, and the OpenAI plan (examples, tokens, estimated cost) or why the file would be rejected.
"""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from distill.config import DistillConfig, SweepPoint
from distill.select import Screening, Selection, label_counts
from ie.chat_examples import DataError
from ie.config import TaskSchema
from ie.fine_tune_plan import plan_files
from ie.records import LabelledRecord
from ie.schema import Record, write_records
from ie.student_format import TEMPLATE_PATH, template_sha256, to_example

Example = dict[str, Any]  # {"id": str, "messages": [{"role", "content"}, ...]}


def split_records(records: list[Record], fraction: float, seed: int) -> tuple[list[Record], list[Record]]:
    """Seeded train/validation split; at least one validation record when fraction > 0 and there are two."""
    order = list(records)
    random.Random(seed).shuffle(order)
    n_val = max(1, round(len(order) * fraction)) if fraction > 0 and len(order) >= 2 else 0
    return order[n_val:], order[:n_val]


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def save_dataset(path: Path, splits: dict[str, list[Example]]) -> None:
    """A `DatasetDict` with fixed features; an empty split is left out (datasets cannot save one)."""
    from datasets import Dataset, DatasetDict, Features, List, Value

    features = Features({"id": Value("string"),
                         "messages": List({"role": Value("string"), "content": Value("string")})})
    columns = {name: {"id": [r["id"] for r in rows], "messages": [r["messages"] for r in rows]}
               for name, rows in splits.items() if rows}
    DatasetDict({name: Dataset.from_dict(cols, features=features) for name, cols in columns.items()}
                ).save_to_disk(str(path))


def plan_openai(train: Path, validation: Path | None, model: str | None) -> dict[str, Any]:
    """The offline OpenAI fine-tuning plan for the exported files, or the reason the API would reject them."""
    try:
        plan = plan_files(str(train), str(validation) if validation else None, **({"model": model} if model else {}))
    except DataError as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True, **plan.as_dict()}


def _labels_only(record: LabelledRecord) -> LabelledRecord:
    return LabelledRecord(id=record.id, text=record.text, entities=record.entities, relations=record.relations,
                          tokens=record.tokens, meta=record.meta, confidence=record.confidence)


def export(out: Path, screening: Screening, selection: Selection, schema: TaskSchema, cfg: DistillConfig,
           sources: dict[str, Any], point: SweepPoint | None = None) -> dict[str, Any]:
    """Write the folder described in the module doc; return the manifest. `point`: the sweep point `selection`
    was made at, whose caps the settings then show."""
    out.mkdir(parents=True, exist_ok=True)
    train, val = split_records(selection.records, cfg.validation_fraction, cfg.seed)
    splits = {name: [{"id": r.id, "messages": to_example(r, schema)} for r in rows]
              for name, rows in (("train", train), ("validation", val))}
    for name, rows in splits.items():
        write_jsonl(out / f"{name}.jsonl", [{"messages": ex["messages"]} for ex in rows])
    save_dataset(out / "dataset", splits)
    write_records(out / "selected.jsonl", [_labels_only(r) for r in selection.records])
    openai = plan_openai(out / "train.jsonl", out / "validation.jsonl" if val else None, cfg.openai_model)
    manifest = {
        "sources": sources,
        "per_type": None if point is None else point.label,
        "settings": cfg.as_dict() if point is None else point.settings(cfg),
        "seed": cfg.seed,
        "template": {"path": TEMPLATE_PATH.name, "sha256": template_sha256()},
        "screening": screening.summary(),
        "selection": {
            "records": len(selection.records),
            "train": len(train),
            "validation": len(val),
            "split_ids": {name: [ex["id"] for ex in rows] for name, rows in splits.items()},
            "candidates_per_type": selection.candidates,
            "chosen_per_type": {k: len(v) for k, v in selection.chosen_for.items()},
            "chosen_ids": selection.chosen_for,
            "labels_per_type": label_counts(selection.records),
        },
        "warnings": selection.warnings + ([f"openai: {openai['error']}"] if not openai["ok"] else []),
        "openai": openai,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest
