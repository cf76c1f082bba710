"""ie.windows without any model: splitting to a budget, merging offsets, overlap dedup and conflicts, relations."""
import asyncio

from ie.record_stats import RecordStats
from ie.records import LabelledRecord
from ie.schema import Entity, Record, Relation
from ie.windows import (
    MIN_WINDOW_TOKENS,
    Window,
    add_unseen,
    context_tokens,
    estimate_tokens,
    label_in_windows,
    merge_stats,
    merge_windows,
    split_halves,
    split_windows,
    text_budget,
)

SENTENCES = [f"Sentence {i} says that Anna Berg{i} met Otto Lind in Paris ." for i in range(40)]
LONG = Record(id="doc", text=" ".join(SENTENCES), tokens=" ".join(SENTENCES).split(" "))


def covered(windows, length):
    assert windows[0].start == 0 and windows[-1].end == length
    for a, b in zip(windows, windows[1:]):
        assert b.start < a.end, "consecutive windows must overlap"
        assert b.start > a.start


def test_a_text_that_fits_is_one_window_and_the_estimate_is_conservative():
    rec = Record(id="s", text="Ronald Reagan was born in Tampico , Illinois , in 1911 .")
    assert split_windows(rec, 1000) == [Window(0, len(rec.text), rec)]
    # smollm2's tokenizer gives 20 tokens for this sentence (llama.cpp /tokenize).
    assert estimate_tokens(rec.text) >= 20


def test_windows_fit_the_budget_overlap_and_end_at_sentences():
    windows = split_windows(LONG, 120)
    assert len(windows) > 4
    covered(windows, len(LONG.text))
    for w in windows:
        assert estimate_tokens(w.record.text) <= 120
        assert w.record.text == LONG.text[w.start:w.end]
        assert w.record.tokens == w.record.text.split(" ")  # the record's words passed on
        assert not w.record.entities
    assert all(w.record.text.endswith(" .") for w in windows)
    assert [w.record.id for w in windows[:2]] == ["doc#w0", "doc#w1"]


def test_a_text_that_fits_the_budget_stays_whole_and_a_longer_one_is_cut_to_the_window_size():
    budget = estimate_tokens(LONG.text)
    assert len(split_windows(LONG, budget, size=40)) == 1
    windows = split_windows(LONG, budget - 1, size=40)
    covered(windows, len(LONG.text))
    assert all(estimate_tokens(w.record.text) <= 40 for w in windows)


def test_a_text_with_no_sentence_boundaries_is_cut_between_words_and_a_huge_word_between_characters():
    words = Record(id="w", text=" ".join(f"word{i}" for i in range(600)))
    windows = split_windows(words, 50)
    covered(windows, len(words.text))
    for w in windows:
        assert estimate_tokens(w.record.text) <= 50
        assert words.text[w.start - 1: w.start] in ("", " ") and words.text[w.end: w.end + 1] in ("", " ")
    blob = Record(id="b", text="x" * 2000)
    windows = split_windows(blob, 40)
    assert windows[0].start == 0 and windows[-1].end == 2000
    assert all(estimate_tokens(w.record.text) <= 40 for w in windows)
    assert "".join(w.record.text for w in windows) == blob.text  # no overlap inside one word, nothing lost


def ent(text, full, etype, window, conf=0.9, occurrence=0):
    """An entity of `window`'s record, located by its occurrence in the full text."""
    start = -1
    for _ in range(occurrence + 1):
        start = full.index(text, start + 1)
    start -= window.start
    assert window.record.text[start:start + len(text)] == text
    return Entity(start=start, end=start + len(text), type=etype, text=text, confidence=conf)


def labelled(window, entities, relations=()):
    return window.record.model_copy(update={"entities": entities, "relations": list(relations)})


def two_windows():
    text = "Anna Berg lives in Oslo . She met Otto Lind in Paris . Otto Lind works for Acme Corp in Rome ."
    rec = Record(id="r", text=text)
    end = text.index("Otto Lind works") + len("Otto Lind works")
    first = Window(0, end, Record(id="r#w0", text=text[:end]))
    start = text.index("She met")
    second = Window(start, len(text), Record(id="r#w1", text=text[start:]))
    return rec, first, second


def test_merge_shifts_offsets_and_keeps_one_copy_of_an_overlap_mention():
    rec, w0, w1 = two_windows()
    a = labelled(w0, [ent("Anna Berg", rec.text, "Peop", w0), ent("Otto Lind", rec.text, "Peop", w0, 0.6),
                      ent("Paris", rec.text, "Loc", w0)], [Relation(head=1, tail=2, type="Live_In")])
    b = labelled(w1, [ent("Otto Lind", rec.text, "Peop", w1, 0.8), ent("Paris", rec.text, "Loc", w1),
                      ent("Acme Corp", rec.text, "Org", w1), ent("Rome", rec.text, "Loc", w1)],
                 [Relation(head=0, tail=1, type="Live_In"), Relation(head=2, tail=3, type="OrgBased_In")])
    out = merge_windows(rec, [w0, w1], [a, b])
    assert [(e.text, e.type) for e in out.entities] == [("Anna Berg", "Peop"), ("Otto Lind", "Peop"),
                                                        ("Paris", "Loc"), ("Acme Corp", "Org"), ("Rome", "Loc")]
    for e in out.entities:
        assert rec.text[e.start:e.end] == e.text
    assert out.entities[1].confidence == 0.8  # the same span and type once, its higher confidence
    assert [(out.entities[r.head].text, r.type, out.entities[r.tail].text) for r in out.relations] == [
        ("Otto Lind", "Live_In", "Paris"), ("Acme Corp", "OrgBased_In", "Rome")]


def test_a_mention_cut_by_a_window_edge_is_dropped_and_conflicts_go_to_the_mention_with_more_context():
    rec, w0, w1 = two_windows()
    cut = ent("Otto Lind works", rec.text, "Org", w0, occurrence=0)  # ends on w0's inner edge
    early = ent("Paris", rec.text, "Org", w0)  # near w0's end
    late = ent("Paris", rec.text, "Loc", w1)  # well inside w1
    lind = ent("Lind", rec.text, "Peop", w1, occurrence=1)  # the second Otto Lind, seen whole in w1 only
    out = merge_windows(rec, [w0, w1], [labelled(w0, [cut, early]), labelled(w1, [late, lind])])
    assert [(e.text, e.type) for e in out.entities] == [("Paris", "Loc"), ("Lind", "Peop")]


def test_a_mention_on_an_edge_without_overlap_is_kept_and_blank_text_is_one_window():
    text = "Oslo Rome"
    windows = [Window(0, 4, Record(id="t#w0", text="Oslo")), Window(5, 9, Record(id="t#w1", text="Rome"))]
    parts = [labelled(w, [Entity(start=0, end=4, type="Loc", text=w.record.text)]) for w in windows]
    out = merge_windows(Record(id="t", text=text), windows, parts)
    assert [e.text for e in out.entities] == ["Oslo", "Rome"]
    assert len(split_windows(Record(id="n", text="\n" * 500), 50)) == 1


def test_a_relation_whose_argument_lost_a_conflict_is_dropped():
    rec, w0, w1 = two_windows()
    a = labelled(w0, [ent("Otto Lind", rec.text, "Peop", w0), ent("Paris", rec.text, "Org", w0)],
                 [Relation(head=0, tail=1, type="Work_For")])
    b = labelled(w1, [ent("Paris", rec.text, "Loc", w1)])
    out = merge_windows(rec, [w0, w1], [a, b])
    assert [(e.text, e.type) for e in out.entities] == [("Otto Lind", "Peop"), ("Paris", "Loc")]
    assert out.relations == []


def test_label_in_windows_labels_each_window_and_merges_offsets_and_stats():
    seen = []

    async def label(record):
        seen.append(record.id)
        found = [Entity(start=i, end=i + 5, type="Loc", text="Paris") for i in range(len(record.text))
                 if record.text.startswith("Paris", i)]
        return LabelledRecord(id=record.id, text=record.text, tokens=record.tokens, entities=found,
                              stats={"calls": 1, "error": None, "cached": False})

    out = asyncio.run(label_in_windows(LONG, 120, label))
    assert len(seen) == out.stats.windows > 1 and out.stats.calls == len(seen)
    assert [e.start for e in out.entities] == [i for i in range(len(LONG.text)) if LONG.text.startswith("Paris", i)]
    assert [(w.start, w.end) for w in out.windows] == [(w.start, w.end) for w in split_windows(LONG, 120)]
    assert out.tokens == LONG.tokens
    short = Record(id="s", text="Paris .")
    assert asyncio.run(label_in_windows(short, 120, label)).windows is None


def test_budget_context_and_stats_rules():
    assert context_tokens(None, None) is None and text_budget(None, 300, 400) is None  # unknown: no windows
    assert context_tokens(4096, None) == 4096 and context_tokens(None, 1000) == 1000
    assert context_tokens(4096, 1000) == 1000 and context_tokens(1000, 4096) == 1000  # a flag only narrows
    assert text_budget(2048, 300, 400) == 2048 - 300 - 400 - 32
    assert text_budget(512, 300, 400) == MIN_WINDOW_TOKENS  # the estimate over-counts: the smallest windows
    merged = merge_stats([RecordStats.model_validate(s) for s in (
        {"calls": 2, "wall_s": 0.5, "error": None, "cached": False},
        {"calls": 3, "wall_s": 0.25, "error": "HTTP 400", "cached": True, "invalid": 1})])
    assert merged.as_dict() == {"calls": 5, "wall_s": 0.75, "error": "HTTP 400", "cached": True, "invalid": 1}


SENTENCE = Record(id="s", text="Anna Berg of Acme Corp met Otto Lind in Paris on Monday after the long meeting in Oslo .")


def test_halves_are_two_overlapping_windows_cut_between_words():
    halves = split_halves(SENTENCE)
    assert len(halves) == 2
    covered(halves, len(SENTENCE.text))
    for h in halves:
        assert h.record.text == SENTENCE.text[h.start:h.end] and " " not in (h.record.text[0], h.record.text[-1])
        assert estimate_tokens(h.record.text) <= 0.6 * estimate_tokens(SENTENCE.text) + 1


def entity(text, type_, record=SENTENCE):
    start = record.text.index(text)
    return Entity(start=start, end=start + len(text), type=type_, text=text)


def test_a_second_look_adds_only_mentions_the_whole_answer_has_no_overlap_with():
    anna, lind, paris = entity("Anna Berg", "Peop"), entity("Otto Lind", "Peop"), entity("Paris", "Loc")
    whole = SENTENCE.model_copy(update={"entities": [lind, paris], "relations": [Relation(head=0, tail=1, type="Live_In")]})
    extra = SENTENCE.model_copy(update={"entities": [
        anna, entity("Acme Corp", "Org"), entity("Otto", "Peop"), entity("Paris", "Org"), entity("Oslo", "Loc")],
        "relations": [Relation(head=0, tail=1, type="Work_For"), Relation(head=2, tail=4, type="Live_In"),
                      Relation(head=3, tail=4, type="Located_In")]})
    out = add_unseen(whole, extra)
    # "Otto" (inside "Otto Lind") and "Paris" as Org overlap the whole answer's mentions: the whole answer wins
    assert [(e.text, e.type) for e in out.entities] == [
        ("Anna Berg", "Peop"), ("Acme Corp", "Org"), ("Otto Lind", "Peop"), ("Paris", "Loc"), ("Oslo", "Loc")]
    named = {(out.entities[r.head].text, r.type, out.entities[r.tail].text) for r in out.relations}
    # the whole answer's relation renumbered; the halves' relation between two added mentions kept; those of
    # mentions the whole answer overrode dropped
    assert named == {("Otto Lind", "Live_In", "Paris"), ("Anna Berg", "Work_For", "Acme Corp")}
    assert add_unseen(whole, SENTENCE) == whole.model_copy(update={"entities": [lind, paris]})
