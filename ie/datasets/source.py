"""Reading source files record by record, with the line each record starts on, and field checks that
raise `RecordFormatError` naming the file, line and field."""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from ie import schema
from ie.schema import RecordFormatError


@dataclass(frozen=True)
class Where:
    """A place in a source file, for error messages."""

    path: Path
    line: int

    def fail(self, field: str, message: str) -> NoReturn:
        raise RecordFormatError(self.path, self.line, field, message)

    def get(self, obj: Any, key: str, kind: type | tuple[type, ...], field: str) -> Any:
        """`obj[key]`, checked to be a `kind`; `field` is the path of `obj` used in the message."""
        name = f"{field}.{key}" if field else key
        if not isinstance(obj, dict):
            self.fail(field or "<record>", f"expected a JSON object, got {type(obj).__name__}")
        if key not in obj:
            self.fail(name, "missing")
        value = obj[key]
        # bool is an int subclass; a True offset is a malformed file, not position 1.
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
            self.fail(name, f"expected {_kind_name(kind)}, got {type(value).__name__}")
        return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _kinds(kind))


def _json_error(path: Path, exc: json.JSONDecodeError) -> NoReturn:
    raise RecordFormatError(path, exc.lineno, "<json>", f"invalid JSON: {exc.msg} (column {exc.colno})") from None


def iter_json_array(path: str | Path) -> Iterator[tuple[Where, Any]]:
    """The elements of a file holding one JSON array, each with the line it starts on."""
    path = Path(path)
    text = schema.read_text(path)
    decoder = json.JSONDecoder()
    pos = _skip_space(text, 0)
    if not text.startswith("[", pos):
        raise RecordFormatError(path, text.count("\n", 0, pos) + 1, "<json>", "expected a JSON array")
    pos = _skip_space(text, pos + 1)
    line, line_pos = 1, 0
    while not text.startswith("]", pos):
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            _json_error(path, exc)
        line += text.count("\n", line_pos, pos)
        line_pos = pos
        yield Where(path, line), obj
        pos = _skip_space(text, end)
        if text.startswith(",", pos):
            pos = _skip_space(text, pos + 1)
        elif not text.startswith("]", pos):
            raise RecordFormatError(path, text.count("\n", 0, pos) + 1, "<json>", "expected ',' or ']'")


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def iter_json_lines(path: str | Path) -> Iterator[tuple[Where, Any]]:
    """The objects of a JSON Lines file, each with its line; blank lines are skipped."""
    for lineno, obj in schema.iter_json_lines(path):
        yield Where(Path(path), lineno), obj
