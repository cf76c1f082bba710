"""`ie.grounding`, pure: a named mention becomes exact spans of the text, whole words first."""
from ie.grounding import Span, find_occurrences, ground_mention, normalize_mention

TEXT = "The Iraqi army left Iraq for the Palace of Fine Arts ."


def test_a_mention_grounds_as_a_whole_word_first_then_trimmed_then_without_its_article():
    assert find_occurrences(TEXT, "Iraq") == [Span(20, 24, "Iraq")]  # not inside "Iraqi"
    assert find_occurrences("Iraqi troops", "Iraq") == [Span(0, 4, "Iraq")]  # no whole word: any occurrence
    palace = [Span(33, 52, "Palace of Fine Arts")]
    assert ground_mention(TEXT, ' "Palace of Fine Arts", ') == palace  # edge punctuation trimmed
    assert ground_mention(TEXT, "The Palace of Fine Arts") == palace  # "The Palace" is not in the text
    assert ground_mention(TEXT, "Paris") == [] and find_occurrences(TEXT, "") == []
    assert (normalize_mention(" (U.S.) "), normalize_mention("Rome.")) == ("U.S.", "Rome")  # an abbreviation's dot stays


def _spans(text, bounds, max_words):
    """Every substring of `text` from one token's start to a later (or the same) token's end, by brute force."""
    return {text[s:e] for i, (s, _) in enumerate(bounds) for (_, e) in bounds[i:]
            if len(text[s:e].split()) <= (max_words or len(text))}


def test_span_pattern_matches_exactly_the_spans_at_token_edges_up_to_max_words():
    import re

    from ie.grounding import span_pattern

    text = 'Reagan (R.-Calif.) met "Gorbachev" in U.S. capital.'
    pieces = [m.span() for m in re.finditer(r"\w+|[^\w\s]", text)]
    candidates = {text[s:e] for s in range(len(text)) for e in range(s + 1, len(text) + 1)} | {"Paris", ""}
    for max_words in (None, 1, 2):
        pattern = re.compile(span_pattern(text, max_words=max_words))
        assert {c for c in candidates if pattern.fullmatch(c)} == _spans(text, pieces, max_words)
    # Given tokens, spans snap to them: "R.-Calif." is one token here, so "Calif" alone is no span.
    tokens = "Reagan ( R.-Calif. ) met"
    bounds = ((0, 6), (7, 8), (9, 18), (19, 20), (21, 24))
    pattern = re.compile(span_pattern(tokens, bounds, max_words=3))
    assert pattern.fullmatch("R.-Calif.") and pattern.fullmatch("( R.-Calif. )")
    assert not pattern.fullmatch("Calif") and not pattern.fullmatch("Reagan ( R.-Calif. )")
    assert span_pattern("") == "^$"
