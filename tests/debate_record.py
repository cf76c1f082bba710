"""One labelled CoNLL04-style record with a small debate transcript, and its gold: every error class the viewer
marks (a correct mention, a wrong type, a spurious one, a missed one; a wrong and a missed relation)."""
from ie.records import LabelledRecord
from ie.schema import Record

TEXT = "Jake Garn of NASA flew from Houston ."


def _span(text: str, type_: str, confidence: float | None = None) -> dict:
    start = TEXT.index(text)
    return {"start": start, "end": start + len(text), "type": type_, "text": text,
            **({"confidence": confidence} if confidence is not None else {})}


def _call(role: str, agent: str, answer: dict, **extra) -> dict:
    return {"role": role, "agent": agent, "template": f"{role}.txt", "answer": answer, **extra}


DEBATE = {
    "method": "crossagentie",
    "calls": [
        _call("ner_agent", "ner:Peop", {"items": [{"text": "Jake  Garn", "confidence": 0.9, "evidence": "a person"}]}),
        _call("ner_agent", "ner:Loc", {"items": [{"text": "NASA", "confidence": 0.6, "evidence": "a place"}]}),
        _call("ner_agent", "ner:Org", {"items": [{"text": "NASA", "confidence": 0.8, "evidence": "an agency"}]}),
        _call("summarizer", "summarizer:likelihood", {"probabilities": {"Loc": 0.55, "Org": 0.4, "none": 0.05}},
              asked="NASA"),
        _call("re_agent", "re:Work_For", {"items": [{"head": "Jake Garn", "tail": "NASA", "confidence": 0.9,
                                                     "evidence": "of"}]}),
    ],
    "conflicts": [{"id": "e1", "kind": "label", "options": ['"NASA" is Loc', '"NASA" is Org'],
                   "agents": ["ner:Loc", "ner:Org"],
                   "stances": [{"round": 0, "agent": "ner:Loc", "choice": "A", "confidence": 0.6, "reason": "a place"},
                               {"round": 0, "agent": "ner:Org", "choice": "B", "confidence": 0.8,
                                "reason": "an agency"}],
                   "settled_by": "summarizer", "winner": '"NASA" is Loc'}],
    "alignment": [{"round": 1, "before": {"size": 1, "re_only": ["flew/Other"]},
                   "actions": [{"action": "added", "entity": "flew", "type": "Other"}], "after": {"size": 0}}],
    "notes": ["re:Kill skipped: no type-compatible pair among the entities"],
}

PREDICTED = LabelledRecord.model_validate({
    "id": "rec-1", "text": TEXT, "confidence": 0.71, "debate": DEBATE,
    "stats": {"calls": 5, "prompt_tokens": 900, "completion_tokens": 100, "wall_s": 12.5},
    "entities": [_span("Jake Garn", "Peop", 0.86), _span("NASA", "Loc", 0.55), _span("flew", "Other", 0.4)],
    "relations": [{"head": 0, "tail": 1, "type": "Work_For", "confidence": 0.8}]})

GOLD = Record.model_validate({
    "id": "rec-1", "text": TEXT,
    "entities": [_span("Jake Garn", "Peop"), _span("NASA", "Org"), _span("Houston", "Loc")],
    "relations": [{"head": 0, "tail": 1, "type": "Work_For"}]})
