"""The part of a teacher's debate transcript (`ie.records.Transcript`) that decided one mention or relation, for
the run viewer (pure): which agents proposed it, the conflict it was in (every stance, how it was settled and
the winner), the likelihood Summarizer's verdict on its span, and what the name extent check, the cross-task
debate and alignment changed. Mentions are matched by their text (agents write spans with their own spacing:
whitespace is ignored)."""
from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from ie.records import ConflictLog, Transcript
from ie.schema import Entity

SPACE = re.compile(r"\s+")


class Proposal(BaseModel):
    """One agent's answer item that named it."""
    agent: str
    confidence: float | None = None
    evidence: str = ""


class StanceView(BaseModel):
    round: int
    agent: str
    option: str = Field(description="the option's label ('\"X\" is Type'), or 'none of them'")
    confidence: float
    reason: str


class ConflictView(BaseModel):
    kind: str
    options: list[str]
    stances: list[StanceView]
    settled_by: str
    winner: str | None


class Decision(BaseModel):
    proposed_by: list[Proposal] = Field(default_factory=list)
    conflicts: list[ConflictView] = Field(default_factory=list)
    verdict: dict[str, float] = Field(default_factory=dict, description="the likelihood Summarizer's P(type) "
                                      "for its span")
    changes: list[str] = Field(default_factory=list, description="what the extent check, the cross-task "
                               "debate and alignment did to it, one sentence each")


def _same(a: Any, b: str) -> bool:
    return isinstance(a, str) and SPACE.sub("", a) == SPACE.sub("", b)


def _items(answer: Any) -> list[dict[str, Any]]:
    items = answer.get("items") if isinstance(answer, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _conflict(log: ConflictLog) -> ConflictView:
    def option(choice: str) -> str:
        i = ord(choice) - ord("A") if len(choice) == 1 else -1
        return log.options[i] if 0 <= i < len(log.options) else "none of them"

    return ConflictView(kind=log.kind, options=log.options, settled_by=str(log.settled_by), winner=log.winner,
                        stances=[StanceView(round=s.round, agent=str(s.agent), option=option(s.choice),
                                            confidence=s.confidence, reason=s.reason) for s in log.stances])


def entity_decision(debate: Transcript | None, entity: Entity) -> Decision | None:
    """How `entity` came to be (None without a transcript)."""
    if debate is None:
        return None
    text = entity.text
    proposed = [Proposal(agent=c.agent, confidence=i.get("confidence"), evidence=str(i.get("evidence") or ""))
                for c in debate.calls if c.role == "ner_agent" for i in _items(c.answer)
                if any(_same(i.get(k), text) for k in ("text", "mention", "span", "name"))]
    conflicts = [_conflict(c) for c in debate.conflicts if any(o.startswith(f'"{text}" is ') for o in c.options)]
    verdicts = [c.answer.get("probabilities", {}) for c in debate.calls
                if c.role == "summarizer" and _same(c.asked, text) and isinstance(c.answer, dict)]
    changes = [f"name extent check: {e.mention!r} trimmed to {e.trimmed_to!r}" for e in debate.extents
               if e.trimmed_to and _same(e.trimmed_to, text)]
    changes += [f"uncontested check: retyped from {c.type} ({c.verdict} {c.probability:.2f})" for c in debate.checks
                if c.outcome == "retyped" and _same(c.mention, text) and c.verdict == entity.type]
    for a in debate.alignment:
        changes += [f"cross-task round {a.round}: alignment {x.action} it"
                    + (f" (was {x.from_type})" if x.from_type else "") + (f" as {x.type}" if x.type else "")
                    for x in a.actions if _same(x.entity, text)]
        changes += [f"cross-task round {a.round}: the relations needed it as {m.split('/')[-1]} (Δ)"
                    for m in a.before.re_only if _same(m.rsplit("/", 1)[0], text)]
    return Decision(proposed_by=proposed, conflicts=conflicts, verdict=verdicts[-1] if verdicts else {},
                    changes=changes)


def relation_decision(debate: Transcript | None, head: str, rtype: str, tail: str) -> Decision | None:
    """How the relation (`head` `rtype` `tail`, by mention text) came to be (None without a transcript)."""
    if debate is None:
        return None
    proposed = [Proposal(agent=c.agent, confidence=i.get("confidence"), evidence=str(i.get("evidence") or ""))
                for c in debate.calls if c.role == "re_agent" and c.agent.endswith(f":{rtype}")
                for i in _items(c.answer) if _same(i.get("head"), head) and _same(i.get("tail"), tail)]
    conflicts = [_conflict(c) for c in debate.conflicts
                 if any(o.startswith(f'"{head}" ') and o.endswith(f' "{tail}"') for o in c.options)]
    changes = [f"cross-task round {a.round}: {len(a.before.re_only)} mentions the relations needed were not "
               f"entities (Δ), {len(a.after.re_only)} after alignment" for a in debate.alignment if a.before.re_only]
    return Decision(proposed_by=proposed, conflicts=conflicts, changes=changes)
