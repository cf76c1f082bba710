"""`visualize`: labelled records as the page every run writes (`ie.viewer`), for a library user's own records."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crossagentie.labelling import Schema, dataset_config
from ie.config import score_options
from ie.records import LabelledRecord
from ie.schema import Record
from ie.view import run_view
from ie.viewer import write_page


def visualize(records: Sequence[LabelledRecord], *, schema: Schema, path: str | Path = "report.html",
              gold: Sequence[Record] | None = None, title: str = "crossagentie") -> Path:
    """Write one self-contained HTML page of `records` (what `extract_batch` returns) to `path` and return it: each
    text with its mentions highlighted by type and confidence, its relations, a click on one showing the debate
    that decided it (teacher methods); with `gold` (records of the same ids), the wrong and missed items."""
    dataset = dataset_config(schema)
    view = run_view(title, [f"{len(records)} records, schema {dataset.name}."], {"records": list(records)}, gold,
                    dataset.task_schema, score_options(dataset))
    return write_page(Path(path), view)
