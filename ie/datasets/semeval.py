"""SemEval-2010 Task 8 (`TRAIN_FILE.TXT`, `TEST_FILE_FULL.TXT`): blocks of `id<TAB>"sentence with <e1>..</e1>
and <e2>..</e2>"`, the label, a `Comment:` line, separated by blank lines.

The tags are stripped; e1 and e2 become entities 0 and 1 (type `Nominal`). `Cause-Effect(e2,e1)` becomes one
`Cause-Effect` relation with head e2 and tail e1; `Other` becomes no relation. `meta.label` keeps the label."""
from __future__ import annotations

import re
from pathlib import Path

from ie.datasets.source import Where
from ie.schema import Record, iter_text_lines, parse_record

ENTITY_TYPE = "Nominal"
OTHER = "Other"
TAG = re.compile(r"<(/?)(e[12])>")
LABEL = re.compile(r"^(?P<type>[A-Za-z-]+)\((?P<head>e[12]),(?P<tail>e[12])\)$")


def load(path: str | Path, id_prefix: str) -> list[Record]:
    """Records `{id_prefix}-{source id}`, e.g. `semeval-test-8001`."""
    path = Path(path)
    return [example_record(block, id_prefix, Where(path, line)) for line, block in _blocks(path)]


def _blocks(path: Path) -> list[tuple[int, list[str]]]:
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    for lineno, line in iter_text_lines(path):
        if line.strip():
            if not current:
                blocks.append((lineno, current))
            current.append(line.rstrip("\r\n"))
        else:
            current = []
    return blocks


def example_record(block: list[str], id_prefix: str, where: Where) -> Record:
    source_id, tab, quoted = block[0].partition("\t")
    if not tab or not source_id.strip().isdigit():
        where.fail("id", f"expected 'ID<TAB>\"sentence\"', got {block[0][:60]!r}")
    if len(block) < 2:
        where.fail("label", "missing label line")
    text, spans = strip_tags(quoted.strip().removeprefix('"').removesuffix('"'), where)
    entities = [{"start": s, "end": e, "type": ENTITY_TYPE, "text": text[s:e]} for s, e in (spans["e1"], spans["e2"])]
    label = block[1].strip()
    match = LABEL.match(label)
    if label != OTHER and (match is None or match["head"] == match["tail"]):
        Where(where.path, where.line + 1).fail(
            "label", f"expected 'Relation(e1,e2)', 'Relation(e2,e1)' or 'Other', got {label!r}")
    relations = [] if label == OTHER else [
        {"head": int(match["head"][1]) - 1, "tail": int(match["tail"][1]) - 1, "type": match["type"]}
    ]
    record = {"id": f"{id_prefix}-{source_id.strip()}", "text": text, "entities": entities,
              "relations": relations, "meta": {"label": label}}
    return parse_record(record, where.path, where.line)


def strip_tags(tagged: str, where: Where) -> tuple[str, dict[str, tuple[int, int]]]:
    """The sentence without tags, and the [start, end) of e1 and e2 in it."""
    pieces, opened, spans = [], {}, {}
    length, pos = 0, 0
    for tag in TAG.finditer(tagged):
        pieces.append(tagged[pos:tag.start()])
        length += tag.start() - pos
        pos = tag.end()
        closing, name = tag.groups()
        if not closing:
            opened[name] = length
        elif name in opened:
            spans[name] = (opened.pop(name), length)
    pieces.append(tagged[pos:])
    for name in ("e1", "e2"):
        if name not in spans or spans[name][0] >= spans[name][1]:
            where.fail(f"sentence.{name}", f"expected one non-empty <{name}>...</{name}>")
    return "".join(pieces), spans
