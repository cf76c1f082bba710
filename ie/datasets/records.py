"""The generic record JSONL of `ie.schema` (gold and predictions alike); ids come from the file."""
from __future__ import annotations

from pathlib import Path

from ie.schema import Record, read_records


def load(path: str | Path, id_prefix: str = "") -> list[Record]:
    """`id_prefix` is unused: records carry their own ids."""
    return read_records(path)
