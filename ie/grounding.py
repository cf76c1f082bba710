"""Ground model-named spans in the text: every span the toolkit emits is an exact substring of the input.

Used identically by the teacher, the baselines and the student client, so that all methods are scored on the
same footing. Pure functions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Edge characters a model often drags into a mention but that gold spans rarely include.
_EDGE_JUNK = " \t\n\"'`.,;:!?()[]{}"
_LEADING_ARTICLES = ("the ", "The ", "a ", "an ")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


def normalize_mention(mention: str) -> str:
    """Trim whitespace and edge punctuation; keep a trailing '.' that belongs to an abbreviation (U.S.)."""
    m = mention.strip()
    while m and m[0] in _EDGE_JUNK:
        m = m[1:]
    while m and m[-1] in _EDGE_JUNK and not re.search(r"\b\w\.$", m):
        m = m[:-1]
    return m.strip()


def _is_word_boundary(text: str, start: int, end: int) -> bool:
    before_ok = start == 0 or not text[start - 1].isalnum()
    after_ok = end == len(text) or not text[end].isalnum()
    return before_ok and after_ok


def find_occurrences(text: str, mention: str) -> list[Span]:
    """All exact occurrences of `mention` at word boundaries; if none, any exact occurrence."""
    if not mention:
        return []
    hits = [m.start() for m in re.finditer(re.escape(mention), text)]
    bounded = [s for s in hits if _is_word_boundary(text, s, s + len(mention))]
    chosen = bounded or hits
    return [Span(s, s + len(mention), mention) for s in chosen]


def ground_mention(text: str, mention: str) -> list[Span]:
    """Occurrences of a model-named mention: as given, then trimmed, then without a leading article."""
    candidates = [mention, normalize_mention(mention)]
    for article in _LEADING_ARTICLES:
        if candidates[-1].startswith(article):
            candidates.append(candidates[-1][len(article):])
    for cand in candidates:
        spans = find_occurrences(text, cand)
        if spans:
            return spans
    return []


# A word or a punctuation mark: the units a span starts and ends on when the text has no tokens.
PIECE = re.compile(r"\w+|[^\w\s]")


def _escape(text: str) -> str:
    """`text` as a literal of the regex dialect JSON schema `pattern` shares with llguidance, xgrammar and
    ECMA-262 (no `\\Q`, no escape of `-` outside a class)."""
    return "".join("\\" + ch if ch in r"\^$.|?*+()[]{}/" else ch for ch in text)


def span_pattern(text: str, tokens: tuple[tuple[int, int], ...] = (), max_words: int | None = None) -> str:
    """An anchored regex whose matches are exactly the substrings of `text` that start and end at token edges
    (`tokens`, [start, end) of each; none given: words and punctuation marks) and hold at most `max_words`
    whitespace-separated words. Given as a mention's JSON schema `pattern`, a grammar-constrained server can
    only write a span of the text, which grounding then always finds; its size grows as tokens x max_words."""
    bounds = list(tokens) or [m.span() for m in PIECE.finditer(text)]
    if not bounds:
        return "^$"
    alternatives = []
    for i, (start, end) in enumerate(bounds):
        # The spans starting at token i: token i, then optionally the gap and token i+1, and so on, nested.
        steps, words = [], 1
        for j in range(i + 1, len(bounds)):
            gap = text[bounds[j - 1][1]:bounds[j][0]]
            words += any(ch.isspace() for ch in gap)
            if max_words is not None and words > max_words:
                break
            steps.append(_escape(gap + text[bounds[j][0]:bounds[j][1]]))
        tail = ""
        for step in reversed(steps):
            tail = f"(?:{step}{tail})?"
        alternatives.append(_escape(text[start:end]) + tail)
    return "^(?:" + "|".join(dict.fromkeys(alternatives)) + ")$"
