"""CoNLL-2003 column format: `TOKEN POS CHUNK NER` per line (the NER tag is the last column, IOB2),
sentences separated by blank lines, documents started by a `-DOCSTART-` line that is not a sentence."""
from __future__ import annotations

from pathlib import Path

from ie.datasets.source import Where
from ie.datasets.tokens import TokenSpan, token_record
from ie.schema import Record, iter_text_lines

DOCSTART = "-DOCSTART-"


def load(path: str | Path, id_prefix: str) -> list[Record]:
    """Records `{id_prefix}-{index}`; `meta.doc` is the 0-based document index (-1 before any -DOCSTART-)."""
    path = Path(path)
    records: list[Record] = []
    tokens: list[str] = []
    tags: list[str] = []
    doc, first_line = -1, 0

    def flush() -> None:
        if tokens:
            where = Where(path, first_line)
            spans = iob_spans(tags, where)
            records.append(token_record(f"{id_prefix}-{len(records)}", tokens[:], spans, [], where, {"doc": doc}))
            tokens.clear()
            tags.clear()

    for lineno, line in iter_text_lines(path):
        columns = line.split()
        if not columns:
            flush()
        elif columns[0] == DOCSTART:
            flush()
            doc += 1
        elif len(columns) < 2:
            Where(path, lineno).fail("NER", f"expected 'TOKEN ... TAG' columns, got {line.strip()!r}")
        else:
            first_line = first_line if tokens else lineno
            tokens.append(columns[0])
            tags.append(columns[-1])
    flush()
    return records


def iob_spans(tags: list[str], where: Where) -> list[TokenSpan]:
    """Entity spans from IOB2 tags; an `I-X` after `O` or another type starts a new entity (IOB1-safe).
    `where` is the sentence's first line; a bad tag is reported on its own line."""
    spans: list[TokenSpan] = []
    start, current = 0, None
    for i, tag in enumerate(tags + ["O"]):
        prefix, _, etype = tag.partition("-")
        if tag != "O" and (prefix not in ("B", "I") or not etype):
            Where(where.path, where.line + i).fail("NER", f"bad IOB tag {tag!r}")
        if current is not None and (tag == "O" or prefix == "B" or etype != current):
            spans.append((start, i, current))
            current = None
        if tag != "O" and current is None:
            start, current = i, etype
    return spans
