"""The GPU check's training data: a few hand-labelled sentences rendered as distilled student examples.

    python scripts/gpu_check_data.py --config configs/conll04.yaml --out runs/gpu_check/data

Writes `train.jsonl` (each sentence twice, as `ie.student_format.to_example` renders it, checked by
`ie.chat_examples.read_chat_jsonl`) and `texts.txt` (the sentences, for `serve.client`). No teacher run: the labels
are the fixture's own, so the check needs no model before the one it trains.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ie.chat_examples import read_chat_jsonl
from ie.config import load_config, resolve_config_path
from ie.schema import Entity, Record, Relation
from ie.student_format import to_example

# (text, [(mention, entity type)], [(head mention, relation type, tail mention)]), in CoNLL04's schema.
FIXTURE = [
    ("Ronald Reagan was born in Tampico .", [("Ronald Reagan", "Peop"), ("Tampico", "Loc")],
     [("Ronald Reagan", "Live_In", "Tampico")]),
    ("Bill Gates runs Microsoft from Redmond .", [("Bill Gates", "Peop"), ("Microsoft", "Org"), ("Redmond", "Loc")],
     [("Bill Gates", "Work_For", "Microsoft"), ("Microsoft", "OrgBased_In", "Redmond")]),
    ("Dallas is a city in Texas .", [("Dallas", "Loc"), ("Texas", "Loc")], [("Dallas", "Located_In", "Texas")]),
    ("Oswald shot Kennedy in 1963 .", [("Oswald", "Peop"), ("Kennedy", "Peop"), ("1963", "Other")],
     [("Oswald", "Kill", "Kennedy")]),
]


def fixture_records() -> list[Record]:
    records = []
    for n, (text, mentions, triples) in enumerate(FIXTURE):
        entities = [Entity(start=text.index(m), end=text.index(m) + len(m), type=t, text=m) for m, t in mentions]
        index = {e.text: i for i, e in enumerate(entities)}
        relations = [Relation(head=index[h], tail=index[t], type=r) for h, r, t in triples]
        records.append(Record(id=f"gpu-check-{n}", text=text, entities=entities, relations=relations))
    return records


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--config", required=True, help="dataset config (path or name) whose schema the fixture uses")
    p.add_argument("--out", type=Path, required=True, help="folder for train.jsonl and texts.txt")
    args = p.parse_args(argv)
    schema = load_config(resolve_config_path(args.config)).task_schema
    records = fixture_records()
    args.out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"messages": to_example(r, schema)}, ensure_ascii=False) for r in records * 2]
    (args.out / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "texts.txt").write_text("".join(r.text + "\n" for r in records), encoding="utf-8")
    print(f"{args.out}: {len(read_chat_jsonl(args.out / 'train.jsonl'))} training examples, {len(records)} texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
