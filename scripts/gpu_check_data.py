"""The GPU check's training data: a few sentences made from the config's own schema, as distilled student examples.

    python scripts/gpu_check_data.py --config configs/scierc.yaml --out runs/gpu_check/data

One sentence per relation type, its statement filled with examples of its argument types ("maximum entropy model is
used for machine translation ."), then one per entity type no sentence names yet, up to `--max-texts`. Writes
`train.jsonl` (each sentence twice, as `ie.student_format.to_example` renders it, checked by
`ie.chat_examples.read_chat_jsonl`) and `texts.txt` (the sentences, for `serve.client`). No data split and no teacher
run: the check exercises the GPU path, so labels made from the schema are enough, for any domain.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ie.chat_examples import read_chat_jsonl
from ie.config import TaskSchema, load_config, resolve_config_path
from ie.schema import Entity, Record, Relation
from ie.student_format import to_example


def _mentions_of(schema: TaskSchema, etype: str) -> list[str]:
    """A type's config examples, then its name, so a type without examples still has a mention."""
    return [*schema.entity_types[etype].examples, etype]


def _entity(text: str, mention: str, etype: str, taken: list[Entity]) -> Entity:
    """`mention` at its first occurrence in `text` that overlaps no entity already placed."""
    start = text.find(mention)
    while any(start < e.end and e.start < start + len(mention) for e in taken):
        start = text.find(mention, start + 1)
    if start < 0:
        raise ValueError(f"{mention!r} does not occur apart from the other mentions of {text!r}")
    return Entity(start=start, end=start + len(mention), type=etype, text=mention)


def relation_record(schema: TaskSchema, rtype: str, n: int) -> Record:
    """The relation type's statement with an example of its first head type and a different one of its tail type."""
    spec = schema.relation_types[rtype]
    first = next(iter(schema.entity_types))
    htype, ttype = (spec.head or [first])[0], (spec.tail or [first])[0]
    head = _mentions_of(schema, htype)[0]
    tail = next(m for m in _mentions_of(schema, ttype) if head not in m and m not in head)
    text = spec.statement.format(head=head, tail=tail, relation=rtype.replace("_", " ")) + " ."
    h = _entity(text, head, htype, [])
    t = _entity(text, tail, ttype, [h])
    return Record(id=f"gpu-check-{n}", text=text, entities=[h, t], relations=[Relation(head=0, tail=1, type=rtype)])


def schema_records(schema: TaskSchema, max_texts: int) -> list[Record]:
    """Relation sentences first, then a sentence for each entity type still unnamed, at most `max_texts` in all."""
    records = [relation_record(schema, rtype, n) for n, rtype in enumerate(schema.relation_types)][:max_texts]
    named = {e.type for r in records for e in r.entities}
    for etype in schema.entity_types:
        if etype not in named and len(records) < max_texts:
            mention = _mentions_of(schema, etype)[0]
            text = f"Here {mention} is mentioned ."
            records.append(Record(id=f"gpu-check-{len(records)}", text=text,
                                  entities=[_entity(text, mention, etype, [])]))
    return records


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--config", required=True, help="dataset config (path or name) whose schema makes the sentences")
    p.add_argument("--out", type=Path, required=True, help="folder for train.jsonl and texts.txt")
    p.add_argument("--max-texts", type=int, default=6, help="at most this many sentences (default: 6)")
    args = p.parse_args(argv)
    schema = load_config(resolve_config_path(args.config)).task_schema
    records = schema_records(schema, args.max_texts)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"messages": to_example(r, schema)}, ensure_ascii=False) for r in records * 2]
    (args.out / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "texts.txt").write_text("".join(r.text + "\n" for r in records), encoding="utf-8")
    print(f"{args.out}: {len(read_chat_jsonl(args.out / 'train.jsonl'))} training examples, {len(records)} texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
