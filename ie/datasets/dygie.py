"""DyGIE/PURE JSON Lines (SciERC `train.json`/`dev.json`): one document a line with per-sentence lists,
`"ner": [[[start, end, label], ...], ...]` and `"relations": [[[h_start, h_end, t_start, t_end, label], ...], ...]`
in DOCUMENT-level token offsets with INCLUSIVE ends. One record per sentence; nested entities are kept."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ie.datasets.source import Where, iter_json_lines
from ie.datasets.tokens import IndexedRelation, TokenSpan, check_token_span, token_record
from ie.schema import Record

# DyGIE keeps PTB bracket escapes; the text a model reads should have the characters.
PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


def load(path: str | Path, id_prefix: str) -> list[Record]:
    """Records `{id_prefix}-{n}` numbered across documents; `meta` keeps `doc_key` and `sentence` index."""
    records: list[Record] = []
    for where, doc in iter_json_lines(path):
        sentences = where.get(doc, "sentences", list, "")
        ner = where.get(doc, "ner", list, "")
        relations = doc.get("relations") or [[] for _ in sentences]
        if not len(sentences) == len(ner) == len(relations):
            where.fail("ner", f"{len(sentences)} sentences but {len(ner)} ner and {len(relations)} relations lists")
        offset = 0
        for k, tokens in enumerate(sentences):
            meta = {"doc_key": doc.get("doc_key"), "sentence": k}
            spans = _spans(ner[k], offset, len(tokens), where, f"ner[{k}]")
            rels = _relations(relations[k], spans, offset, where, f"relations[{k}]")
            tokens = [PTB_ESCAPES.get(tok, tok) for tok in tokens]
            records.append(token_record(f"{id_prefix}-{len(records)}", tokens, spans, rels, where, meta))
            offset += len(tokens)
    return records


def _sentence_span(start: Any, end: Any, offset: int, n_tokens: int, where: Where, field: str) -> tuple[int, int]:
    """Document offsets, end inclusive -> sentence offsets, end exclusive."""
    if not isinstance(start, int) or not isinstance(end, int):
        where.fail(field, f"expected int offsets, got {start!r}, {end!r}")
    span = (start - offset, end - offset + 1)
    check_token_span(*span, n_tokens, where, field)
    return span


def _spans(items: Any, offset: int, n_tokens: int, where: Where, field: str) -> list[TokenSpan]:
    spans: list[TokenSpan] = []
    for j, item in enumerate(items):
        if not isinstance(item, list) or len(item) < 3 or not isinstance(item[2], str):
            where.fail(f"{field}[{j}]", f"expected [start, end, label], got {item!r}")
        spans.append((*_sentence_span(item[0], item[1], offset, n_tokens, where, f"{field}[{j}]"), item[2]))
    return spans


def _relations(items: Any, spans: list[TokenSpan], offset: int, where: Where, field: str) -> list[IndexedRelation]:
    # Relation arguments name spans; each must be one of the sentence's entities (the first if nested
    # entities share a span).
    index = {}
    for i, (start, end, _) in enumerate(spans):
        index.setdefault((start, end), i)
    relations: list[IndexedRelation] = []
    for j, item in enumerate(items):
        if (not isinstance(item, list) or len(item) < 5 or not isinstance(item[4], str)
                or not all(isinstance(x, int) for x in item[:4])):
            where.fail(f"{field}[{j}]", f"expected [h_start, h_end, t_start, t_end, label], got {item!r}")
        args = []
        for side, (start, end) in (("head", item[0:2]), ("tail", item[2:4])):
            span = (start - offset, end - offset + 1)
            if span not in index:
                where.fail(f"{field}[{j}].{side}", f"span [{start},{end}] is not an entity of this sentence")
            args.append(index[span])
        relations.append((args[0], args[1], item[4]))
    return relations
