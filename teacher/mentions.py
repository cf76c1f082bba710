"""Post-processing of model-named mentions, the same for every method (pure functions).

A weak model drags labels, quotes and articles into mentions, re-spaces tokenised text ("O'Brien" for
"O 'Brien") and lists common nouns or pronouns; strict F1 punishes all of it. Grounding itself is
`ie.grounding`; `ground` only adds a whitespace-insensitive fallback for tokenised text.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ie.grounding import Span, ground_mention

_PRONOUNS = frozenset(
    "i me my he him his she her hers it its we us our they them their you your this that these those who whom "
    "which what there here".split()
)
_UNIT = re.compile(r"\w+|[^\w\s]")


_LOWER_WORD = re.compile(r"[a-z][a-z'-]*")  # a lowercase word: context around a name, not part of it
_ARTICLE = re.compile(r"^(?:the|The|a|an|A|An)\s+(?=\S)")
_POSSESSIVE = re.compile(r"(?<=\w)\s*['’]s$")


@dataclass(frozen=True)
class MentionRules:
    require_capital_or_digit: bool = True
    max_words: int = 8
    # [start, end) of each token when the text is tokens joined by spaces: spans snap to whole tokens
    # ("Boise" -> "Boise." when the tokeniser kept the period), since gold spans never split a token.
    tokens: tuple[tuple[int, int], ...] = ()


def clean_mention(raw: str, type_names: Iterable[str] = ()) -> str:
    """Strip a type label the model wrote around the mention ("Peop: Reagan", "Reagan (Peop)"), quotes and a
    leading article: names follow "the" far more often than they include it (CoNLL04 train: 393 to 14)."""
    m = raw.strip().strip("\"'`“”‘’ ")
    for name in type_names:
        m = re.sub(rf"^{re.escape(name)}\s*[:=-]\s*|\s*[(\[]{re.escape(name)}[)\]]$", "", m, flags=re.IGNORECASE)
    return _ARTICLE.sub("", m.strip())


def name_core(mention: str) -> str:
    """The mention without the lowercase words around the name ("in San Francisco", "diver Brian Michaud",
    "Hong Kong construction firm"): a weak model drags context into mentions. Trailing words stay in number
    phrases ("27 percent"). On CoNLL04 train this changes 1.3% of gold entities ("K mart")."""
    words = [m for m in re.finditer(r"\S+", mention) if not _LOWER_WORD.fullmatch(m.group(0))]
    if not words:
        return ""
    end = words[-1].end() if not re.search(r"\d", mention) else len(mention.rstrip())
    return mention[words[0].start():end]


def plausible(mention: str, rules: MentionRules) -> bool:
    words = mention.split()
    if not words or len(words) > rules.max_words or not any(ch.isalnum() for ch in mention):
        return False
    if mention.lower() in _PRONOUNS:
        return False
    return not rules.require_capital_or_digit or bool(re.search(r"[A-Z0-9]", mention))


def ground_loose(text: str, mention: str) -> list[Span]:
    """Occurrences ignoring whitespace between words and punctuation, at word boundaries."""
    units = _UNIT.findall(mention)
    if not units:
        return []
    pattern = r"\s*".join(re.escape(u) for u in units)
    spans = []
    for m in re.finditer(rf"(?<!\w){pattern}(?!\w)", text):
        spans.append(Span(m.start(), m.end(), m.group(0)))
    return spans


def ground(text: str, raw: str, rules: MentionRules, type_names: Iterable[str] = ()) -> list[Span]:
    """Every occurrence of a cleaned, plausible mention; [] means ungrounded (or implausible)."""
    mention = clean_mention(raw, type_names)
    if rules.require_capital_or_digit:
        mention = name_core(mention)
    # A trailing possessive is a clitic, not the name ("Ms. Carpenter 's office"): 2 of 3,377 CoNLL04 train
    # entities end in "'s".
    mention = _POSSESSIVE.sub("", mention)
    if not plausible(mention, rules):
        return []
    spans = ground_mention(text, mention) or ground_loose(text, mention)
    if rules.tokens:
        spans = list(dict.fromkeys(snap_to_tokens(text, s, rules.tokens) for s in spans))
    return [s for s in spans if plausible(s.text, rules)]


def snap_to_tokens(text: str, span: Span, tokens: Sequence[tuple[int, int]]) -> Span:
    """Widen a span to the tokens it touches."""
    inside = [t for t in tokens if t[0] < span.end and span.start < t[1]]
    if not inside:
        return span
    start, end = inside[0][0], inside[-1][1]
    return Span(start, end, text[start:end])


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


Item = TypeVar("Item")


def resolve_overlaps(spans: Sequence[tuple[tuple[int, int], float, Item]]) -> list[Item]:
    """Of overlapping spans keep the most confident, then the longest, then the earliest: flat typing, and
    one source's nested mentions ("John Wilkes Booth" over "Booth") with equal scores."""
    ordered = sorted(spans, key=lambda s: (-s[1], -(s[0][1] - s[0][0]), s[0][0]))
    kept: list[tuple[tuple[int, int], float, Item]] = []
    for entry in ordered:
        if not any(overlaps(entry[0], k[0]) for k in kept):
            kept.append(entry)
    return [item for _, _, item in sorted(kept, key=lambda s: s[0])]
