"""The labelled record, typed: what the teacher and the student write (`predictions.jsonl`) and what the report,
the bench, distill, the viewer and the Python API read. A `LabelledRecord` is a `Record` with its record-level
`confidence`, its `stats` (`RecordStats`), the teacher's `debate` transcript (`Transcript`) and, for a text
labelled in windows by the student, its `windows`; every field is an attribute, none is read by key.

`read_labelled` is the one reader of a run's files: a line written by an older version either still validates
or is refused naming the file, the line, the field and how to convert it.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from ie.claims import AgentIdText, SettlementText
from ie.record_stats import RecordStats
from ie.schema import Record, RecordFormatError, iter_json_lines, parse_record


class Logged(BaseModel):
    """A transcript entry; `window` is the window it came from when the text was labelled in windows."""
    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)
    window: int | None = None


class CallLog(Logged):
    """One LLM call: who asked (`role`, `agent`), with which prompt, the answer (valid, or the raw text), its
    tokens, attempts (re-asks included), whether it came from the cache, and its error or cut-off."""
    role: str
    agent: str
    template: str
    round: int | None = None
    sample: int | None = None  # which of n samples (self-consistency)
    asked: str | None = None  # the mention a likelihood question scored
    answer: Any = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    cached: bool = False
    error: str | None = None
    truncated: bool | None = None  # cut off at max_tokens; its complete items were kept


class Stance(BaseModel):
    """One agent's stance on a conflict in one round (round 0: its own claim)."""
    round: int
    agent: AgentIdText
    choice: str  # an option's letter, or N
    confidence: float
    reason: str


class ConflictLog(Logged):
    """One conflict: its options, who took which stance when, and how it was settled."""
    id: str
    kind: str
    options: list[str]
    agents: list[AgentIdText]
    stances: list[Stance]
    settled_by: SettlementText
    winner: str | None = None


class DeltaLog(BaseModel):
    """Δ of one cross-task round (`teacher.alignment.Delta`): mentions as `text/type`."""
    size: int = 0
    ner_only: list[str] = Field(default_factory=list)
    re_only: list[str] = Field(default_factory=list)
    type_mismatch: list[str] = Field(default_factory=list)


class AlignmentAction(BaseModel):
    """What alignment did to one required entity or relation: `added` or `retyped` an entity (`from_type` its old
    type, written `from`), or `dropped_relation`."""
    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)
    action: str
    entity: str | None = None
    type: str | None = None
    from_type: str | None = Field(default=None, alias="from")
    relation: str | None = None


class AlignmentRound(Logged):
    """One cross-task round: Δ before, what alignment did, Δ after."""
    round: int
    before: DeltaLog
    actions: list[AlignmentAction] = Field(default_factory=list)
    after: DeltaLog


class ExtentLog(Logged):
    """One long mention's name extent check: the name the agent gave, and what the mention was trimmed to."""
    mention: str
    type: str
    name: str | None = None
    trimmed_to: str | None = None


class UncontestedCheckLog(Logged):
    """One uncontested mention's check (`teacher.uncontested_check`): what became of it, by the likelihood
    Summarizer's most probable answer for its span (`verdict`: its own type, "none", or the type it took) and
    that answer's probability."""
    mention: str
    type: str
    outcome: Literal["kept", "dropped", "retyped"]
    verdict: str
    probability: float


class RoutingLog(BaseModel):
    """The types routed to agents (`teacher.routing`), each skipped agent with its reason, the router's answer
    (names, or P(yes) by type) and why every type was routed instead (`fallback`)."""
    entity_types: list[str]
    relation_types: list[str]
    skipped: dict[str, str] = Field(default_factory=dict)
    answer: dict[str, Any] | None = None
    fallback: str | None = None


class WindowSpan(BaseModel):
    """A window of a long text: its character offsets and, from the teacher, its record confidence."""
    start: int
    end: int
    confidence: float | None = None


class Transcript(BaseModel):
    """The record's `debate`: every call, every conflict and how it was settled, Δ per cross-task round, each
    long mention's name extent check, each uncontested mention's check, notes, the routing (None: not routed)
    and the windows (None: labelled whole; else every entry carries its `window`)."""
    method: str
    calls: list[CallLog] = Field(default_factory=list)
    conflicts: list[ConflictLog] = Field(default_factory=list)
    alignment: list[AlignmentRound] = Field(default_factory=list)
    extents: list[ExtentLog] = Field(default_factory=list)
    checks: list[UncontestedCheckLog] = Field(default_factory=list, exclude_if=lambda v: not v)  # written when on
    notes: list[str] = Field(default_factory=list)
    routing: RoutingLog | None = None
    windows: list[WindowSpan] | None = None

    @field_validator("routing", mode="before")
    @classmethod
    def _unrouted(cls, value: Any) -> Any:
        """Runs before the typed record wrote `{}` for a record that was not routed."""
        return value or None


class WindowLabel(WindowSpan):
    """One window of a record the student or teacher labelled in windows, with its own transcript (teacher)."""
    debate: Transcript | None = None


class LabelledRecord(Record):
    """A record as a labeller returns it (see the module docstring); `stats` all zero when none was written."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    stats: RecordStats = Field(default_factory=RecordStats, exclude_if=lambda s: not s.as_dict())
    debate: Transcript | None = None
    windows: list[WindowLabel] | None = None

    @field_serializer("stats")
    def _stats(self, stats: RecordStats) -> dict[str, Any]:
        """Only the counters its labeller set, as written before the record was typed."""
        return stats.as_dict()


def parse_labelled(obj: object, path: str | Path = "<memory>", line: int = 1) -> LabelledRecord:
    """One labelled record from its JSON object; a malformed one (or one of an unknown older layout) raises
    RecordFormatError naming the file, line and field, and how to convert it."""
    try:
        return parse_record(obj, path, line, LabelledRecord)
    except RecordFormatError as exc:
        if not exc.field.startswith(("debate", "stats", "windows")):
            raise
        raise RecordFormatError(path, line, exc.field, exc.message + (
            "; a run written by an older version: label it again (a re-run with the same settings reuses its "
            "calls.sqlite), or drop the field with `jq -c 'del(.debate)'` to keep its labels")) from None


def iter_labelled(path: str | Path) -> Iterator[LabelledRecord]:
    """The labelled records of a predictions JSONL file, lazily; blank lines skipped."""
    for lineno, obj in iter_json_lines(path):
        yield parse_labelled(obj, path, lineno)


def read_labelled(path: str | Path) -> list[LabelledRecord]:
    """Every labelled record of a predictions JSONL file (`iter_labelled`)."""
    return list(iter_labelled(path))
