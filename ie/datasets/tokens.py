"""Token-based sources become records whose `text` is the tokens joined by single spaces."""
from __future__ import annotations

from typing import Any

from ie.datasets.source import Where
from ie.schema import Record, parse_record

# (token start, token end exclusive, type) and (head entity index, tail entity index, type)
TokenSpan = tuple[int, int, str]
IndexedRelation = tuple[int, int, str]


def token_offsets(tokens: list[str]) -> list[tuple[int, int]]:
    """Character [start, end) of each token in `" ".join(tokens)`."""
    offsets, pos = [], 0
    for tok in tokens:
        offsets.append((pos, pos + len(tok)))
        pos += len(tok) + 1
    return offsets


def token_record(
    record_id: str,
    tokens: list[str],
    spans: list[TokenSpan],
    relations: list[IndexedRelation],
    where: Where,
    meta: dict[str, Any] | None = None,
) -> Record:
    """A record with character offsets computed from token spans the caller has already range-checked."""
    text = " ".join(tokens)
    offsets = token_offsets(tokens)
    entities = []
    for start, end, etype in spans:
        char_start, char_end = offsets[start][0], offsets[end - 1][1]
        entities.append({"start": char_start, "end": char_end, "type": etype, "text": text[char_start:char_end]})
    obj: dict[str, Any] = {
        "id": record_id,
        "text": text,
        "entities": entities,
        "relations": [{"head": h, "tail": t, "type": rtype} for h, t, rtype in relations],
        "tokens": tokens,
    }
    if meta:
        obj["meta"] = meta
    return parse_record(obj, where.path, where.line)


def check_token_span(start: Any, end: Any, n_tokens: int, where: Where, field: str) -> None:
    for name, value in (("start", start), ("end", end)):
        if not isinstance(value, int) or isinstance(value, bool):
            where.fail(f"{field}.{name}", f"expected int, got {type(value).__name__}")
    if not 0 <= start < end <= n_tokens:
        where.fail(field, f"token span [{start},{end}) outside a sentence of {n_tokens} tokens")
