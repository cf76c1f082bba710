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
