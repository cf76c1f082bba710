"""NYT (CasRel/OneRel exact-match version): a JSON array of `{"text", "triple_list": [[subject, relation,
object], ...]}` with entity strings and no offsets. Each distinct string becomes one entity of type
`Entity` (NYT has no entity types), grounded at its first exact occurrence at word boundaries, else at its
first exact occurrence anywhere. A triple with a string that does not occur in the text is kept in
`meta.ungrounded_triples`, never dropped; `meta.substring_grounded` lists strings found only inside words."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ie.datasets.source import Where, iter_json_array
from ie.schema import Record, parse_record

ENTITY_TYPE = "Entity"


def load(path: str | Path, id_prefix: str) -> list[Record]:
    return [
        sentence_record(obj, f"{id_prefix}-{i}", where, f"[{i}]")
        for i, (where, obj) in enumerate(iter_json_array(path))
    ]


def ground(text: str, string: str) -> tuple[tuple[int, int] | None, bool]:
    """(span of `string` in `text` or None, whether the span sits at word boundaries)."""
    match = re.search(rf"(?<!\w){re.escape(string)}(?!\w)", text)
    if match:
        return match.span(), True
    start = text.find(string) if string else -1
    return ((start, start + len(string)) if start >= 0 else None), False


def sentence_record(obj: Any, record_id: str, where: Where, field: str) -> Record:
    text = where.get(obj, "text", str, field)
    entities: list[dict[str, Any]] = []
    index: dict[str, int | None] = {}
    relations, ungrounded, loose = [], [], []
    for j, triple in enumerate(where.get(obj, "triple_list", list, field)):
        if not (isinstance(triple, list) and len(triple) == 3 and all(isinstance(x, str) for x in triple)):
            where.fail(f"{field}.triple_list[{j}]", f"expected [subject, relation, object] strings, got {triple!r}")
        subject, relation, obj_string = triple
        for string in (subject, obj_string):
            if string not in index:
                span, at_word_boundary = ground(text, string)
                index[string] = None if span is None else len(entities)
                if span is not None:
                    entities.append({"start": span[0], "end": span[1], "type": ENTITY_TYPE, "text": string})
                    if not at_word_boundary:
                        loose.append(string)
        if index[subject] is None or index[obj_string] is None:
            ungrounded.append(triple)
        else:
            relations.append({"head": index[subject], "tail": index[obj_string], "type": relation})
    meta = {"ungrounded_triples": ungrounded, "substring_grounded": loose}
    record = {"id": record_id, "text": text, "entities": entities, "relations": relations, "meta": meta}
    return parse_record(record, where.path, where.line)
