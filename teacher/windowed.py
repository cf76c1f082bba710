"""The teacher on long texts: how many tokens of text a method's prompts leave at the endpoint, and a record
too long for that labelled window by window (`ie.windows`), its transcript and confidence made whole again."""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ie.config import TaskSchema
from ie.llm.client import LLMClient
from ie.llm.server_info import client_endpoints, served_context
from ie.records import LabelledRecord, Transcript, WindowLabel, WindowSpan
from ie.schema import Record
from ie.windows import context_tokens, estimate_tokens, label_in_windows, text_budget
from teacher.confidence import record_confidence
from teacher.config import TeacherConfig
from teacher.templates import PROMPT_DIR, load, relation_list, type_list

log = logging.getLogger("teacher")
# Methods whose prompts quote other agents' answers (debate claims, candidate mentions, verified statements).
QUOTING_METHODS = frozenset({"type-agents", "crossagentie"})


def prompt_tokens(schema: TaskSchema, cfg: TeacherConfig) -> int:
    """Estimated tokens of the largest prompt around an empty text: the system message, the shared prefix, the
    longest template and the type and relation lists; for a quoting method, one answer per entity type too."""
    longest = max(estimate_tokens(load(p.stem).template) for p in PROMPT_DIR.glob("*.txt"))
    fixed = sum(estimate_tokens(s) for s in (load("system").template, load("context").template,
                                             ", ".join(schema.entity_types), type_list(schema),
                                             relation_list(schema)))
    quoted = len(schema.entity_types) * cfg.max_tokens if cfg.method in QUOTING_METHODS else 0
    return longest + fixed + quoted


async def method_budget(client: LLMClient, cfg: TeacherConfig, schema: TaskSchema) -> int | None:
    """Tokens of text one window may hold: the endpoint's context (`/props`, else `--context-tokens`; None when
    neither says) less the method's largest prompt and its longest answer (single-prompt baselines ask for 2x)."""
    context = context_tokens(await served_context(client_endpoints(client)), cfg.context_tokens)
    budget = text_budget(context, prompt_tokens(schema, cfg), 2 * cfg.max_tokens)
    if budget is None:
        log.debug("the endpoint reports no context size: texts are labelled whole (--context-tokens sets one)")
    else:
        log.debug("context %d tokens: texts over %d estimated tokens are labelled in windows", context, budget)
    return budget


def _joined(windows: list[WindowLabel], method: str) -> Transcript:
    """The windows' transcripts as one: each entry tagged with its window, the notes, and the window offsets."""
    debate = Transcript(method=method, windows=[WindowSpan(start=w.start, end=w.end, confidence=w.confidence)
                                                for w in windows])
    for i, w in enumerate(windows):
        part = w.debate or Transcript(method=method)
        for name in ("calls", "conflicts", "alignment", "extents", "checks"):
            getattr(debate, name).extend(x.model_copy(update={"window": i}) for x in getattr(part, name))
        debate.notes.extend(part.notes)
    return debate


async def label_long(record: Record, budget: int | None, size: int, method: str,
                     label_one: Callable[[Record], Awaitable[LabelledRecord]]) -> LabelledRecord:
    """`label_one(record)`, or when the text exceeds `budget` its windows (of at most `size` estimated tokens)
    labelled and merged: one `debate`
    (every call tagged with its `window`; `debate.windows` holds the offsets), summed `stats`, and the record
    `confidence` recomputed over the merged items."""
    out = await label_in_windows(record, budget, label_one, size)
    if out.windows is None:
        return out
    confs = [e.confidence or 0.0 for e in out.entities] + [r.confidence or 0.0 for r in out.relations]
    confidence = record_confidence(confs, out.stats.failed_calls, out.stats.unresolved_conflicts)
    return out.model_copy(update={"windows": None, "debate": _joined(out.windows, method), "confidence": confidence})
