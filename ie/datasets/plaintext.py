"""User text: one sentence per line, unlabelled. Blank lines are skipped; surrounding whitespace is trimmed."""
from __future__ import annotations

from pathlib import Path

from ie.schema import Record, iter_text_lines


def load(path: str | Path, id_prefix: str) -> list[Record]:
    """Records `{id_prefix}-{index}`; `meta.line` is the 1-based source line."""
    lines = [(lineno, line.strip()) for lineno, line in iter_text_lines(path)]
    return [
        Record(id=f"{id_prefix}-{i}", text=text, meta={"line": lineno})
        for i, (lineno, text) in enumerate((n, t) for n, t in lines if t)
    ]
