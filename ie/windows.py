"""Long texts in windows (pure): split a record into windows that fit a token budget, merge their labels back.

Tokens are estimated without the model's tokenizer (`estimate_tokens`: letters, digits and punctuation counted
so as to over-count English for the byte-level BPE tokenizers of the small models), so windowing works the same
for every endpoint; an over-count only makes windows smaller.

Windows end at a sentence end where one lies in the second half of the window, else between words (a word with
no space in a budget's length is cut between characters). Consecutive windows overlap by about a fifth of the
budget, so a mention on a boundary is seen whole in one of them. Merging (`merge_windows`):
- offsets are shifted back into the full text;
- a mention touching a window edge inside the overlap with the next (or previous) window may be cut off there
  and is dropped: the overlap shows it whole to that neighbour;
- the same span and type found by two windows is kept once (the higher confidence);
- mentions of two windows whose spans overlap but differ (in extent or type) are a conflict: the one lying
  farther from its window's edges (more context on both sides) is kept, the earlier window on a tie;
- a relation is kept when both its arguments survived the merge; relations between mentions that never share a
  window are not found at all (each window is labelled on its own): cross-window relations are dropped.
A text that fits may still get a second look in two overlapping halves (`split_halves`), whose mentions are added
where the whole text's labels have none (`add_unseen`): a small model recalls less of a long text in one answer.
"""
from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ie.record_stats import RecordStats
from ie.records import LabelledRecord, WindowLabel
from ie.schema import Entity, Record, Relation

log = logging.getLogger("ie.windows")

CHAT_MARGIN_TOKENS = 32  # the chat template's role markers around the messages
MIN_WINDOW_TOKENS = 64  # the smallest window: a budget below it (the estimate over-counts) is raised to it
_PIECE = re.compile(r"[^\W\d_]+|\d+|\n|[ \t]{2,}|[^\w\s]")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")


def _letters(run: str) -> int:
    if len(run) > 1 and run.isupper():
        return len(run)  # capitals split into short pieces: "IZVESTIYA" is 7 tokens for smollm2
    wide = sum(len(c.encode("utf-8")) - 1 for c in run if ord(c) > 127)  # 2-byte letters 1, CJK 2
    return math.ceil(sum(ord(c) < 128 for c in run) / 3) + wide


def estimate_tokens(text: str) -> int:
    """An upper estimate of `text`'s token count: ASCII letters 1 per 3 (all capitals 1 each), other letters 1
    per UTF-8 byte beyond the first, a number 1 per digit plus 1, every punctuation mark, newline and run of
    spaces 1. On CoNLL04 train sentences it is never below smollm2's count and about 1.6x it in all."""
    total = 0
    for piece in _PIECE.findall(text):
        if piece[0].isdigit():
            total += len(piece) + 1
        elif piece[0].isalpha():
            total += _letters(piece)
        else:
            total += 1
    return total


def context_tokens(served: int | None, flag: int | None) -> int | None:
    """The context one request may use: the smaller of what the server reports and the flag (the flag may only
    narrow a server's context), whichever is known; None when neither is (texts are then labelled whole, and
    one too long for the real context fails as a "context overflow" and is listed, never written empty)."""
    known = [n for n in (served, flag) if n]
    return min(known) if known else None


def text_budget(context: int | None, prompt_tokens: int, answer_tokens: int) -> int | None:
    """Tokens left for the text: the context less the prompt around it, the answer and the chat markup (None for
    an unknown context: no windows)."""
    if context is None:
        return None
    budget = context - prompt_tokens - answer_tokens - CHAT_MARGIN_TOKENS
    if budget < MIN_WINDOW_TOKENS:
        # The estimate over-counts (about 1.6x), so the prompt may well fit: windows of the smallest size, and a
        # request that really overflows fails as a "context overflow" (listed, retried), never written empty.
        log.warning("a context of %d tokens leaves an estimated %d for the text after a %d-token prompt and %d "
                    "answer tokens: windows of %d; lower --max-tokens or use a larger context if requests overflow",
                    context, budget, prompt_tokens, answer_tokens, MIN_WINDOW_TOKENS)
        return MIN_WINDOW_TOKENS
    return budget


@dataclass(frozen=True)
class Window:
    """`record` holds `text[start:end]` of the full record, under the id `<id>#w<index>`."""
    start: int
    end: int
    record: Record


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    tokens: int
    ends_sentence: bool


def _units(text: str, budget: int) -> list[_Unit]:
    """The words of `text` (a word too long for `budget` cut into pieces that fit) with their token estimates."""
    units = []
    for m in re.finditer(r"\S+", text):
        start = m.start()
        while start < m.end():
            end = m.end()
            while estimate_tokens(text[start:end]) > budget and end - start > 1:
                end = start + (end - start) // 2
            word = text[start:end]
            units.append(_Unit(start, end, estimate_tokens(word),
                               end == m.end() and bool(_SENTENCE_END.search(word))))
            start = end
    return units


def _window_end(units: list[_Unit], first: int, budget: int) -> int:
    """One past the last unit of the window opened at `first`: as many units as fit, cut back to the last
    sentence end in the window's second half if there is one."""
    used, last = 0, first
    while last < len(units) and used + units[last].tokens <= budget:
        used += units[last].tokens
        last += 1
    last = max(last, first + 1)
    if last == len(units):
        return last
    for cut in range(last, first + (last - first) // 2, -1):
        if units[cut - 1].ends_sentence:
            return cut
    return last


def _next_first(units: list[_Unit], first: int, cut: int, overlap: int) -> int:
    """Where the next window opens: far enough back from `cut` to repeat about `overlap` tokens, at a sentence
    start when one lies in that stretch, always after `first`."""
    back, used = cut, 0
    while back - 1 > first and used + units[back - 1].tokens <= overlap:
        back -= 1
        used += units[back].tokens
    for k in range(back, cut):
        if k > 0 and units[k - 1].ends_sentence:
            return k
    return back


def split_windows(record: Record, budget: int, size: int | None = None, overlap: int | None = None
                  ) -> list[Window]:
    """One window holding the whole record when its text fits `budget` estimated tokens, else windows of at most
    `size` (default and at most `budget`) overlapping by `overlap` (default a fifth of the size). Window records
    carry no labels; `tokens` are passed on when the record's tokens are its words."""
    text = record.text
    if estimate_tokens(text) <= budget or not text.strip():
        return [Window(0, len(text), record.unlabelled())]
    budget = min(budget, size or budget)
    overlap = budget // 5 if overlap is None else overlap
    spaced = bool(record.tokens) and " ".join(record.tokens) == text
    units, windows, first = _units(text, budget), [], 0
    while True:
        cut = _window_end(units, first, budget)
        start, end = units[first].start, units[cut - 1].end
        part = text[start:end]
        extra = {"tokens": part.split(" ")} if spaced else {}
        windows.append(Window(start, end, Record(id=f"{record.id}#w{len(windows)}", text=part, **extra)))
        if cut == len(units):
            return windows
        first = _next_first(units, first, cut, overlap)


@dataclass
class _Found:
    entity: Entity
    window: int
    margin: int  # characters between the mention and the nearer edge of its window


def _shifted(windows: Sequence[Window], labelled: Sequence[Record]) -> list[list[_Found | None]]:
    """Each window's entities in full-text offsets; None for one touching a window edge that a neighbouring
    window overlaps (the neighbour sees what lies across the edge)."""
    out = []
    for w, (window, rec) in enumerate(zip(windows, labelled, strict=True)):
        shared_start = w > 0 and windows[w - 1].end > window.start
        shared_end = w + 1 < len(windows) and windows[w + 1].start < window.end
        found: list[_Found | None] = []
        for e in rec.entities:
            start, end = e.start + window.start, e.end + window.start
            cut = (start == window.start and shared_start) or (end == window.end and shared_end)
            moved = e.model_copy(update={"start": start, "end": end})
            found.append(None if cut else _Found(moved, w, min(start - window.start, window.end - end)))
        out.append(found)
    return out


def _overlaps(a: Entity, b: Entity) -> bool:
    return a.start < b.end and b.start < a.end


def _better(a: Entity, b: Entity) -> Entity:
    return a if (a.confidence or 0.0) >= (b.confidence or 0.0) else b


def merge_windows(record: Record, windows: Sequence[Window], labelled: Sequence[Record]) -> Record:
    """One record from the labelled windows of `record` (rules in the module docstring); entities in text order."""
    found = _shifted(windows, labelled)
    candidates = sorted((f for per in found for f in per if f is not None), key=lambda f: (-f.margin, f.window))
    kept: dict[tuple[int, int, str], _Found] = {}
    for f in candidates:
        key = f.entity.key
        if key in kept:
            kept[key].entity = _better(kept[key].entity, f.entity)
        elif not any(k.window != f.window and _overlaps(k.entity, f.entity) for k in kept.values()):
            kept[key] = f
    order = sorted(kept, key=lambda k: (k[0], k[1], k[2]))
    index = {key: i for i, key in enumerate(order)}
    relations: dict[tuple[int, int, str], Relation] = {}
    for per, rec in zip(found, labelled, strict=True):
        for r in rec.relations:
            head, tail = per[r.head], per[r.tail]
            if head is None or tail is None or head.entity.key not in index or tail.entity.key not in index:
                continue
            key = (index[head.entity.key], index[tail.entity.key], r.type)
            moved = r.model_copy(update={"head": key[0], "tail": key[1]})
            relations[key] = _better(relations[key], moved) if key in relations else moved  # type: ignore[arg-type]
    return Record(id=record.id, text=record.text, entities=[kept[k].entity for k in order],
                  relations=[relations[k] for k in sorted(relations)])


def split_halves(record: Record) -> list[Window]:
    """Two windows of `record`, each about 0.6 of its estimated tokens, overlapping by a fifth of that (cut
    between words as `split_windows` cuts): a second look at a long text (`add_unseen`)."""
    size = math.ceil(estimate_tokens(record.text) * 0.6)
    return split_windows(record, size, size)


def add_unseen(whole: Record, extra: Record) -> Record:
    """`whole`'s labels plus `extra`'s mentions that overlap none of them (a second look at the same text, e.g.
    its halves merged by `merge_windows`) and `extra`'s relations whose two arguments are then both present;
    where the two disagree, `whole` wins. Entities in text order."""
    entities = list(whole.entities) + [e for e in extra.entities if not any(_overlaps(e, w) for w in whole.entities)]
    order = sorted(range(len(entities)), key=lambda i: (entities[i].start, entities[i].end, entities[i].type))
    position = {old: new for new, old in enumerate(order)}
    index = {entities[old].key: new for old, new in position.items()}
    relations: dict[tuple[int, int, str], Relation] = {}
    for labelled in (whole, extra):
        for r in labelled.relations:
            head, tail = index.get(labelled.entities[r.head].key), index.get(labelled.entities[r.tail].key)
            if head is not None and tail is not None:
                relations.setdefault((head, tail, r.type), r.model_copy(update={"head": head, "tail": tail}))
    return Record(id=whole.id, text=whole.text, entities=[entities[i] for i in order],
                  relations=[relations[k] for k in sorted(relations)])


def merge_stats(stats: Sequence[RecordStats]) -> RecordStats:
    """The windows' `stats` as one: counts and times summed, `cached` or-ed, a text (`failed`, `error`) the
    first window's that has one; what no window set stays unset."""
    out: dict[str, Any] = {}
    for s in stats:
        for key, value in s.as_dict().items():
            if out.get(key) is None:
                out[key] = value
            elif isinstance(value, bool):
                out[key] = out[key] or value
            elif isinstance(value, int | float):
                out[key] = round(out[key] + value, 6)
    return RecordStats.model_validate(out)


async def label_in_windows(record: Record, budget: int | None,
                           label: Callable[[Record], Awaitable[LabelledRecord]], size: int | None = None
                           ) -> LabelledRecord:
    """`label(record)` when the text fits `budget` (or the budget is unknown: None); else `label` on each window
    (of at most `size` estimated tokens, see `split_windows`) and the results merged. The merged record's
    `stats` add up the windows' (plus `windows`: how many), and `windows` lists each window's `start`, `end`,
    `confidence` and `debate` transcript (the teacher's)."""
    windows = split_windows(record, budget, size) if budget is not None else []
    if len(windows) <= 1:
        return await label(record)
    parts = await asyncio.gather(*(label(w.record) for w in windows))
    merged = merge_windows(record, windows, parts)
    stats = merge_stats([p.stats for p in parts])
    stats.windows = len(windows)
    listed = [WindowLabel(start=w.start, end=w.end, confidence=p.confidence, debate=p.debate)
              for w, p in zip(windows, parts, strict=True)]
    return LabelledRecord(id=record.id, text=record.text, entities=merged.entities, relations=merged.relations,
                          tokens=record.tokens, stats=stats, windows=listed)
