"""Post-processing of model-named mentions, the same for every method, teacher and student (pure functions).

Which rules apply is data: the dataset config's `mentions:` section (`MentionProfile`). A type label or quotes
the model wrote around a mention always go; every other rule is a switch or a limit, off by default, since a
rule sized on one domain's names drops what another domain annotates ("it" is a SciERC entity, "features"
has no capital). Grounding itself is `ie.grounding`; `ground` adds a whitespace-insensitive fallback for
tokenised text ("O'Brien" for "O 'Brien").
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ie.grounding import PIECE, Span, ground_mention

PRONOUNS = frozenset(
    "i me my he him his she her hers it its we us our they them their you your this that these those who whom "
    "which what there here".split()
)
# Words that open or close a clause but no noun phrase: what a weak model drags around a mention ("studied in
# the", "given task as a"). No determiners: "this approach" and "that model" are SciERC entities.
AUXILIARIES = frozenset("is are was were be been being am has have had having do does did will would can could "
                        "may might shall should must".split())
FUNCTION_WORDS = AUXILIARIES | frozenset(
    # prepositions
    "of in on at by for with from to into onto upon over under about against between through during without "
    "within among across after before behind below above via than as "
    # conjunctions and relative pronouns
    "and or but nor because although though while whereas if unless which who whom whose".split()
)
_TRAILING_ONLY = frozenset({"the", "a", "an"})  # a mention may open with an article, never end with one
_LOWER_WORD = re.compile(r"[a-z][a-z'-]*")  # a lowercase word: context around a name, not part of it
_ARTICLE = re.compile(r"^(?:the|The|a|an|A|An)\s+(?=\S)")
_POSSESSIVE = re.compile(r"(?<=\w)\s*['’]s$")


class MentionProfile(BaseModel):
    """The dataset config's `mentions:` section: how model-named mentions are cleaned, filtered and capped."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    strip_article: bool = Field(False, description="drop a leading article ('the Palace' -> 'Palace')")
    name_core: bool = Field(False, description="drop the lowercase words around a name ('in San Francisco' -> "
                            "'San Francisco'); a number phrase keeps its trailing words ('27 percent')")
    strip_possessive: bool = Field(False, description="drop a trailing possessive ('Reagan 's' -> 'Reagan')")
    trim_function_words: bool = Field(True, description="drop prepositions, auxiliaries, conjunctions and "
                                      "relative pronouns at either end of a multi-word mention ('in the corpus of' -> "
                                      "'the corpus')")
    drop_clauses: bool = Field(True, description="drop a multi-word mention with an auxiliary or modal verb "
                               "inside ('it has been studied'): a clause, not a name or a term")
    require_capital_or_digit: bool = Field(False, description="drop mentions with no capital letter or digit "
                                           "(for datasets of names)")
    drop_pronouns: bool = Field(False, description="drop a mention that is a lone pronoun ('he', 'it', 'this')")
    max_words: int | None = Field(None, ge=1, description="drop mentions longer than this many words; null = any")
    spans_in_grammar: bool = Field(False, description="on an llguidance server (the embedded one), a mention "
                                   "can only be written as a span of the text at token edges, of at most max_words "
                                   "words")
    max_chars: int | None = Field(None, ge=1, description="cut a mention at this many characters in the answer "
                                  "format (a grammar-constrained server then cannot ramble); null = no cut")
    items_per_agent: int | None = Field(None, ge=1, description="items one type agent may list; null = any")
    pairs_per_agent: int | None = Field(None, ge=1, description="pairs one relation type agent may list; null = "
                                        "items_per_agent")
    items_per_sentence: int | None = Field(None, ge=1, description="entities (and triples) a single-prompt "
                                           "answer may list; null = any")
    relations_per_sentence: int | None = Field(None, ge=1, description="relations a one-step answer may list; "
                                               "null = any")


@dataclass(frozen=True)
class MentionRules:
    """A profile applied to one text."""
    profile: MentionProfile = MentionProfile()
    # [start, end) of each token when the text is tokens joined by spaces: spans snap to whole tokens
    # ("Boise" -> "Boise." when the tokeniser kept the period), since gold spans never split a token.
    tokens: tuple[tuple[int, int], ...] = ()


def strip_labels(raw: str, type_names: Iterable[str] = ()) -> str:
    """Strip a type label the model wrote around the mention ("Peop: Reagan", "Reagan (Peop)") and quotes."""
    m = raw.strip().strip("\"'`“”‘’ ")
    for name in type_names:
        m = re.sub(rf"^{re.escape(name)}\s*[:=-]\s*|\s*[(\[]{re.escape(name)}[)\]]$", "", m, flags=re.IGNORECASE)
    return m.strip()


def strip_article(mention: str) -> str:
    """Without a leading article: CoNLL04 names follow "the" far more often than they include it (train: 393
    to 14)."""
    return _ARTICLE.sub("", mention)


def name_core(mention: str) -> str:
    """The mention without the lowercase words around the name ("in San Francisco", "diver Brian Michaud",
    "Hong Kong construction firm"): a weak model drags context into mentions. Trailing words stay in number
    phrases ("27 percent"); a name that ends in a lowercase word ("K mart" -> "K") loses it, a rare cost."""
    words = [m for m in re.finditer(r"\S+", mention) if not _LOWER_WORD.fullmatch(m.group(0))]
    if not words:
        return ""
    end = words[-1].end() if not re.search(r"\d", mention) else len(mention.rstrip())
    return mention[words[0].start():end]


def strip_possessive(mention: str) -> str:
    """Without a trailing possessive, a clitic and not the name ("Ms. Carpenter 's"): 2 of 3,377 CoNLL04 train
    entities end in "'s"."""
    return _POSSESSIVE.sub("", mention)


def trim_function_words(mention: str) -> str:
    """Without the function words (`FUNCTION_WORDS`, lowercase) at either end of a multi-word mention, and an
    article at its end; a mention made only of them is left as it is (a lone "which" is for `drop_pronouns`)."""
    words = mention.split()
    start, end = 0, len(words)
    while start < end and words[start] in FUNCTION_WORDS:
        start += 1
    while end > start and (words[end - 1] in FUNCTION_WORDS or words[end - 1] in _TRAILING_ONLY):
        end -= 1
    if start == end or (start, end) == (0, len(words)):
        return mention
    spans = list(re.finditer(r"\S+", mention))
    return mention[spans[start].start():spans[end - 1].end()]


# (the profile's switch, the rule) in the order `normalise` applies them.
STEPS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("strip_article", strip_article),
    ("name_core", name_core),
    ("strip_possessive", strip_possessive),
    ("trim_function_words", trim_function_words),
)


def normalise(raw: str, profile: MentionProfile, type_names: Iterable[str] = ()) -> tuple[str, str | None]:
    """(the mention after the profile's rules, the first rule that changed it or None)."""
    mention, changed_by = strip_labels(raw, type_names), None
    for name, rule in STEPS:
        if getattr(profile, name):
            after = rule(mention)
            if after != mention and changed_by is None:
                changed_by = name
            mention = after
    return mention, changed_by


def rejection(mention: str, profile: MentionProfile) -> str | None:
    """The profile field that drops `mention` ("max_words", ...), or None when it is kept; "empty" for a
    mention with no letter or digit."""
    words = mention.split()
    if not words or not any(ch.isalnum() for ch in mention):
        return "empty"
    if profile.max_words is not None and len(words) > profile.max_words:
        return "max_words"
    if profile.drop_clauses and len(words) > 1 and AUXILIARIES & set(words):
        return "drop_clauses"
    if profile.drop_pronouns and mention.lower() in PRONOUNS:
        return "drop_pronouns"
    if profile.require_capital_or_digit and not re.search(r"[A-Z0-9]", mention):
        return "require_capital_or_digit"
    return None


def plausible(mention: str, rules: MentionRules) -> bool:
    return rejection(mention, rules.profile) is None


def example_problem(example: str, profile: MentionProfile, type_names: Iterable[str] = ()) -> str | None:
    """Why the profile would not keep a type's own config example as it is (None: kept)."""
    if profile.max_chars is not None and len(example) > profile.max_chars:
        return f"longer than mentions.max_chars ({profile.max_chars})"
    mention, changed_by = normalise(example, profile, type_names)
    if mention != example:
        return f"changed to {mention!r} by " + (f"mentions.{changed_by}" if changed_by else "quote stripping")
    dropped_by = rejection(mention, profile)
    return None if dropped_by is None else f"dropped by mentions.{dropped_by}"


def ground_loose(text: str, mention: str) -> list[Span]:
    """Occurrences ignoring whitespace between words and punctuation, at word boundaries."""
    units = PIECE.findall(mention)
    if not units:
        return []
    pattern = r"\s*".join(re.escape(u) for u in units)
    spans = []
    for m in re.finditer(rf"(?<!\w){pattern}(?!\w)", text):
        spans.append(Span(m.start(), m.end(), m.group(0)))
    return spans


def ground(text: str, raw: str, rules: MentionRules, type_names: Iterable[str] = ()) -> list[Span]:
    """Every occurrence of a cleaned, plausible mention; [] means ungrounded (or implausible)."""
    mention, _ = normalise(raw, rules.profile, type_names)
    if not plausible(mention, rules):
        return []
    spans = ground_mention(text, mention) or ground_loose(text, mention)
    snapped = (snap_to_tokens(text, s, rules.tokens) if rules.tokens else snap_to_words(text, s) for s in spans)
    return [s for s in dict.fromkeys(snapped) if plausible(s.text, rules)]


def snap_to_tokens(text: str, span: Span, tokens: Sequence[tuple[int, int]]) -> Span:
    """Widen a span to the tokens it touches."""
    inside = [t for t in tokens if t[0] < span.end and span.start < t[1]]
    if not inside:
        return span
    start, end = inside[0][0], inside[-1][1]
    return Span(start, end, text[start:end])


def snap_to_words(text: str, span: Span) -> Span:
    """Widen a span that splits a word to the whole word ("Queen" in "Queens" -> "Queens"), as `snap_to_tokens`
    does for tokenised text: the gold of every shipped dataset lies at word edges (all but 5 of SemEval's 16,000
    spans, inside typos such as "dovesmoles")."""
    start, end = span.start, span.end
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    return span if (start, end) == (span.start, span.end) else Span(start, end, text[start:end])


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
