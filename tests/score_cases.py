"""Two gold records (`GOLD`) and `rec`, which builds records like them from offsets: the scoring tests work out
every P/R/F1 on them by hand."""
from ie.schema import Record

TEXT = "Bo lives in New York ."  # Bo 0-2, lives 3-8, New 12-15, New York 12-20
TEXT2 = "Al works for Acme ."  # Al 0-2, Acme 13-17


def rec(rid, text, entities=(), relations=(), **extra):
    ents = [{"start": s, "end": e, "type": t, "text": text[s:e]} for s, e, t in entities]
    rels = [{"head": h, "tail": t, "type": r} for h, t, r in relations]
    return Record(id=rid, text=text, entities=ents, relations=rels, **extra)


GOLD = [
    rec("r1", TEXT, [(0, 2, "PER"), (12, 20, "LOC")], [(0, 1, "Live_In")]),
    rec("r2", TEXT2, [(0, 2, "PER"), (13, 17, "ORG")], [(0, 1, "Work_For")]),
]
