"""The shared record format: one JSONL line per sentence/document, gold and predictions alike.

`start`/`end` are character offsets into `text` (end exclusive); relation `head`/`tail` index `entities`;
`tokens` are a dataset's words, `meta` what its loader kept of the source. Other keys are kept as they are; what a
labeller adds (`confidence`, `stats`, `debate`) is typed in `ie.records.LabelledRecord`.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class Entity(BaseModel):
    model_config = ConfigDict(extra="allow")
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    type: str
    text: str
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.start, self.end, self.type)


class Relation(BaseModel):
    model_config = ConfigDict(extra="allow")
    head: int = Field(ge=0)
    tail: int = Field(ge=0)
    type: str
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class Record(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    text: str
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    tokens: list[str] | None = None
    meta: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check_offsets(self) -> Record:
        for i, e in enumerate(self.entities):
            if not (0 <= e.start < e.end <= len(self.text)):
                raise ValueError(f"entities[{i}]: span [{e.start},{e.end}) outside text of length {len(self.text)}")
            if self.text[e.start:e.end] != e.text:
                raise ValueError(
                    f"entities[{i}].text: {e.text!r} != text[{e.start}:{e.end}] = {self.text[e.start:e.end]!r}"
                )
        for i, r in enumerate(self.relations):
            for side in ("head", "tail"):
                idx = getattr(r, side)
                if idx >= len(self.entities):
                    raise ValueError(f"relations[{i}].{side}: index {idx} but only {len(self.entities)} entities")
        return self

    def unlabelled(self) -> Record:
        """The same text with no labels and no extras but `tokens`: what a model is given.

        `meta` is dropped on purpose: loaders keep gold-derived facts there (SemEval's label, NYT's
        ungrounded triples), and nothing a model sees may carry the answer."""
        return Record(id=self.id, text=self.text, tokens=self.tokens)

    def triples(self) -> list[tuple[Entity, str, Entity]]:
        return [(self.entities[r.head], r.type, self.entities[r.tail]) for r in self.relations]


R = TypeVar("R", bound=Record)


class RecordFormatError(ValueError):
    """A malformed line: names the file, the 1-based line number and the failing field."""

    def __init__(self, path: str | Path, line: int, field: str, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        super().__init__(f"{path}:{line}: field '{field}': {message}")


def _first_error(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "<record>"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
        # Offset errors raised by the record validator carry their own field path first.
        field, _, rest = msg.partition(": ")
        if rest and ("[" in field or "." in field):
            return field, rest
    return loc, msg


def parse_record(obj: object, path: str | Path = "<memory>", line: int = 1, model: type[R] = Record) -> R:
    """`obj` as a `model` (a Record, or a subclass such as `ie.records.LabelledRecord`); anything malformed raises
    RecordFormatError naming the file, line and field."""
    if not isinstance(obj, dict):
        raise RecordFormatError(path, line, "<record>", f"expected a JSON object, got {type(obj).__name__}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        field, msg = _first_error(exc)
        raise RecordFormatError(path, line, field, msg) from None


def _not_text(path: str | Path, data: bytes, offset: int | None, first_line: int = 1) -> RecordFormatError:
    """The error for `data` (from line `first_line` of `path`) that is not UTF-8 text at byte `offset` (None:
    at its NUL byte)."""
    offset = data.index(b"\0") if offset is None else offset
    line = first_line + data.count(b"\n", 0, offset)
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return RecordFormatError(path, line, "<text>", f"byte 0x{data[offset]:02x} at column {column}: not UTF-8 "
                             "text (a binary file?)")


def read_text(path: str | Path) -> str:
    """A UTF-8 text file's content; a binary one (invalid UTF-8, a NUL byte) raises RecordFormatError naming
    the line."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_text(path, data, exc.start) from None
    if "\0" in text:
        raise _not_text(path, data, None)
    return text


def iter_text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line, line) of a UTF-8 text file, read line by line; see `read_text` for a binary one."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _not_text(path, raw, exc.start, lineno) from None
            if "\0" in line:
                raise _not_text(path, raw, None, lineno)
            yield lineno, line


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, object]]:
    """(1-based line, parsed object) for each non-blank line of a JSON Lines file; bad JSON raises RecordFormatError."""
    for lineno, line in iter_text_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON: {exc.msg} (column {exc.colno})"
            raise RecordFormatError(path, lineno, "<json>", message) from None
        yield lineno, obj


def iter_records(path: str | Path) -> Iterator[Record]:
    """Read a record JSONL file lazily; blank lines are skipped, anything malformed raises RecordFormatError."""
    for lineno, obj in iter_json_lines(path):
        yield parse_record(obj, path, lineno)


def read_records(path: str | Path) -> list[Record]:
    return list(iter_records(path))


def record_line(record: Record) -> str:
    return json.dumps(record.model_dump(mode="json", exclude_none=True), ensure_ascii=False)


def write_records(path: str | Path, records: Iterable[Record]) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(record_line(rec) + "\n")
            n += 1
    return n


def append_record(path: str | Path, record: Record) -> None:
    """Append one finished record and flush, so a kill loses only records still in flight."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(record_line(record) + "\n")
        fh.flush()
