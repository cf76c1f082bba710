"""The generic record JSONL of `ie.schema` (gold and predictions alike); ids come from the file."""
from __future__ import annotations

from pathlib import Path

from ie.schema import Record, RecordFormatError, iter_json_lines, parse_record


def load(path: str | Path, id_prefix: str = "") -> list[Record]:
    """`id_prefix` is unused: records carry their own ids, which must be unique (a repeat is refused, naming
    both lines: results are matched to inputs by id)."""
    records: list[Record] = []
    first_line: dict[str, int] = {}
    for lineno, obj in iter_json_lines(path):
        record = parse_record(obj, path, lineno)
        if record.id in first_line:
            raise RecordFormatError(path, lineno, "id", f"{record.id!r} repeats the id of line {first_line[record.id]}")
        first_line[record.id] = lineno
        records.append(record)
    return records
