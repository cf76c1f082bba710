"""`ie.mentions`: each rule of the mention profile on and off, grounding, and the config's examples check."""
import pytest

from ie.config import ConfigError, load_config, resolve_config_path
from ie.mentions import (
    MentionProfile,
    MentionRules,
    example_problem,
    ground,
    name_core,
    normalise,
    rejection,
    resolve_overlaps,
    trim_function_words,
)

CONLL04 = MentionRules(load_config(resolve_config_path("conll04")).mentions)
DEFAULT = MentionRules()
TEXT = "said Kevin O 'Brien , of the Palace of Fine Arts in 10 , 000 acres ."


def texts(text, raw, rules, type_names=("Peop",)):
    return [s.text for s in ground(text, raw, rules, type_names)]


def test_conll04_profile_cleans_filters_and_grounds_loosely():
    assert texts(TEXT, "Peop: Kevin", CONLL04) == texts(TEXT, '"Kevin (Peop)"', CONLL04) == ["Kevin"]
    assert texts(TEXT, "Kevin O'Brien", CONLL04) == ["Kevin O 'Brien"]
    assert texts(TEXT, "10,000 acres", CONLL04) == ["10 , 000 acres"]
    assert texts(TEXT, "the Palace of Fine Arts", CONLL04) == ["Palace of Fine Arts"]
    said = "Khrushchev 's aide and Ms. Carpenter 's office called Reagan’s staff ."
    assert [texts(said, m, CONLL04) for m in ("Khrushchev 's", "Khrushchev's", "Ms. Carpenter 's office",
                                              "Reagan’s")] == [["Khrushchev"], ["Khrushchev"], ["Ms. Carpenter"],
                                                               ["Reagan"]]
    tokenised = MentionRules(CONLL04.profile, tokens=((0, 5), (6, 7), (8, 14)))
    assert texts("Dixon , Boise.", "Boise", tokenised) == ["Boise."]
    assert texts(TEXT, "he", CONLL04) == [] and texts(TEXT, "acres", CONLL04) == []  # pronoun; no capital/digit
    assert texts(TEXT, "Paris", CONLL04) == []
    assert texts(TEXT, "of the Palace of Fine Arts in", CONLL04) == ["Palace of Fine Arts"]
    assert [name_core(m) for m in ("in San Francisco", "Hong Kong construction firm", "27 percent", "all")] == [
        "San Francisco", "Hong Kong", "27 percent", ""]


def test_default_profile_keeps_what_a_domain_may_annotate():
    text = "it improves the parser , and this approach has been studied in the corpus of Smith 's lab ."
    for mention in ("it", "this approach", "the parser", "Smith 's lab", "parser"):
        assert texts(text, mention, DEFAULT) == [mention]
    # The one guard on by default: function words at the ends of a clause-like span, and spans with a verb.
    assert texts(text, "in the corpus of", DEFAULT) == ["the corpus"]
    assert texts(text, "this approach has been studied", DEFAULT) == []
    assert texts(text, "Nominal: parser", DEFAULT) == []  # not a type name here: kept, so it does not ground
    assert texts(text, "Nominal: parser", DEFAULT, ["Nominal"]) == ["parser"]


def test_a_span_inside_a_word_widens_to_the_word_as_a_token_would():
    text = "In Queens , the Queen met O'Neill ."
    assert texts(text, "Queen", DEFAULT) == ["Queen"]  # its own word first
    assert texts("In Queens , near Douglaston .", "Queen", DEFAULT) == ["Queens"]
    assert texts("In Queens , near Douglaston .", "glaston", DEFAULT) == ["Douglaston"]
    assert texts("the dovesmoles numbering", "moles", DEFAULT) == ["dovesmoles"]
    assert texts(text, "O'Neil", DEFAULT) == ["O'Neill"] and texts(text, "Neill", DEFAULT) == ["Neill"]


@pytest.mark.parametrize(("switch", "mention", "on", "off"), [
    ({"strip_article": True}, "the Palace", "Palace", "the Palace"),
    ({"name_core": True}, "diver Brian Michaud", "Brian Michaud", "diver Brian Michaud"),
    ({"strip_possessive": True}, "Reagan 's", "Reagan", "Reagan 's"),
    ({"trim_function_words": True}, "of the corpus in", "the corpus", "of the corpus in"),
])
def test_each_rewriting_rule_is_its_own_switch(switch, mention, on, off):
    none = MentionProfile(trim_function_words=False, drop_clauses=False)
    assert normalise(mention, none.model_copy(update=switch)) == (on, next(iter(switch)))
    assert normalise(mention, none) == (off, None)


def test_name_core_no_longer_rides_on_the_capital_filter():
    capital_only = MentionProfile(require_capital_or_digit=True)
    assert normalise("diver Brian Michaud", capital_only)[0] == "diver Brian Michaud"
    assert rejection("features", capital_only) == "require_capital_or_digit"
    assert rejection("features", MentionProfile()) is None


@pytest.mark.parametrize(("switch", "mention", "field"), [
    ({"require_capital_or_digit": True}, "features", "require_capital_or_digit"),
    ({"drop_pronouns": True}, "it", "drop_pronouns"),
    ({"max_words": 2}, "maximum entropy model", "max_words"),
    ({"drop_clauses": True}, "it has been studied", "drop_clauses"),
])
def test_each_dropping_rule_is_its_own_switch(switch, mention, field):
    none = MentionProfile(trim_function_words=False, drop_clauses=False)
    assert rejection(mention, none.model_copy(update=switch)) == field
    assert rejection(mention, none) is None


def test_function_words_are_trimmed_only_at_the_ends_and_never_to_nothing():
    assert trim_function_words("fusion of measurement information with system dynamics") == (
        "fusion of measurement information with system dynamics")
    assert trim_function_words("which") == "which" and trim_function_words("of and") == "of and"
    assert trim_function_words("given task as a") == "given task"
    assert rejection("will", MentionProfile()) is None  # a lone word is no clause


def test_examples_check_names_the_rule():
    conll = CONLL04.profile
    assert example_problem("Ronald Reagan", conll) is None
    assert example_problem("it", MentionProfile(drop_pronouns=True)) == "dropped by mentions.drop_pronouns"
    assert example_problem("features", conll) == "changed to '' by mentions.name_core"
    assert example_problem("the System", conll) == "changed to 'System' by mentions.strip_article"
    assert example_problem("Smithsonian Institution of Washington", MentionProfile(max_chars=20)) == (
        "longer than mentions.max_chars (20)")
    assert example_problem("maximum entropy model", MentionProfile(max_words=2)) == "dropped by mentions.max_words"


def test_config_whose_rules_drop_its_own_example_is_refused(tmp_path):
    scierc = (resolve_config_path("scierc")).read_text(encoding="utf-8")
    path = tmp_path / "scierc.yaml"
    path.write_text(scierc.replace("\nmentions:\n", "\nmentions:\n  drop_pronouns: true\n"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"scierc.yaml: field 'schema.entity_types.Generic.examples\[1\]': 'it' is "
                                          r"dropped by mentions.drop_pronouns"):
        load_config(path)
    path.write_text(scierc.replace("\nmentions:\n", "\nmentions:\n  drop_pronons: true\n"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"field 'mentions.drop_pronons'"):
        load_config(path)


def test_every_shipped_config_keeps_its_examples():
    for name in ("conll04", "conll2003", "scierc", "nyt", "semeval"):
        assert load_config(resolve_config_path(name)).example_errors() == []


def test_overlaps_resolve_to_the_most_confident_then_longest():
    assert resolve_overlaps([((0, 10), 0.0, "long"), ((5, 10), 0.0, "short"), ((20, 25), 0.0, "other")]) == [
        "long", "other"]
