"""SpERT JSON (CoNLL04, SciERC `scierc_joint_er_*.json`): one JSON array of sentences,
`{"tokens", "entities": [{"type","start","end"}] (token offsets, end exclusive),
"relations": [{"type","head","tail"}] (indices into entities), "orig_id"}`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ie.datasets.source import Where, iter_json_array
from ie.datasets.tokens import IndexedRelation, TokenSpan, check_token_span, token_record
from ie.schema import Record


def load(path: str | Path, id_prefix: str) -> list[Record]:
    """Records `{id_prefix}-{index}`; `meta.orig_id` keeps the source id."""
    return [
        sentence_record(obj, f"{id_prefix}-{i}", where, f"[{i}]")
        for i, (where, obj) in enumerate(iter_json_array(path))
    ]


def sentence_record(obj: Any, record_id: str, where: Where, field: str) -> Record:
    tokens = where.get(obj, "tokens", list, field)
    for j, tok in enumerate(tokens):
        if not isinstance(tok, str):
            where.fail(f"{field}.tokens[{j}]", f"expected str, got {type(tok).__name__}")
    spans: list[TokenSpan] = []
    for j, ent in enumerate(where.get(obj, "entities", list, field)):
        ent_field = f"{field}.entities[{j}]"
        start, end = (where.get(ent, key, int, ent_field) for key in ("start", "end"))
        check_token_span(start, end, len(tokens), where, ent_field)
        spans.append((start, end, where.get(ent, "type", str, ent_field)))
    relations: list[IndexedRelation] = []
    for j, rel in enumerate(where.get(obj, "relations", list, field)):
        rel_field = f"{field}.relations[{j}]"
        head, tail = (where.get(rel, side, int, rel_field) for side in ("head", "tail"))
        for side, idx in (("head", head), ("tail", tail)):
            if not 0 <= idx < len(spans):
                where.fail(f"{rel_field}.{side}", f"entity index {idx} but the sentence has {len(spans)} entities")
        relations.append((head, tail, where.get(rel, "type", str, rel_field)))
    meta = {"orig_id": obj["orig_id"]} if "orig_id" in obj else None
    return token_record(record_id, tokens, spans, relations, where, meta)
