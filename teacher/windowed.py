"""The teacher on long texts: how many tokens of text a method's prompts leave at the endpoint, and a record
too long for that labelled window by window (`ie.windows`), its transcript and confidence made whole again."""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ie.config import TaskSchema
from ie.llm.client import LLMClient
from ie.llm.server_info import client_endpoints, served_context
from ie.record_stats import stats_of
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


def _joined(windows: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """The windows' transcripts as one: each list's entries tagged with their window, plus the window offsets."""
    debate: dict[str, Any] = {"method": method, "windows": []}
    for i, w in enumerate(windows):
        part = w.get("debate") or {}
        for key, value in part.items():
            if isinstance(value, list):
                tagged = [{**x, "window": i} if isinstance(x, dict) else x for x in value]
                debate.setdefault(key, []).extend(tagged)
        debate["windows"].append({"start": w["start"], "end": w["end"], "confidence": w.get("confidence")})
    return debate


async def label_long(record: Record, budget: int | None, size: int, method: str,
                     label_one: Callable[[Record], Awaitable[Record]]) -> Record:
    """`label_one(record)`, or when the text exceeds `budget` its windows (of at most `size` estimated tokens)
    labelled and merged: one `debate`
    (every call tagged with its `window`; `debate.windows` holds the offsets), summed `stats`, and the record
    `confidence` recomputed over the merged items."""
    out = await label_in_windows(record, budget, label_one, size)
    extras = dict(out.model_extra or {})
    if "windows" not in extras:
        return out
    debate = _joined(extras.pop("windows"), method)
    stats = stats_of(out)
    confs = [e.confidence or 0.0 for e in out.entities] + [r.confidence or 0.0 for r in out.relations]
    confidence = record_confidence(confs, stats.failed_calls, stats.unresolved_conflicts)
    base = out.model_dump(exclude_none=True, exclude=set(out.model_extra or {}))
    return Record(**base, **extras, debate=debate, confidence=confidence)
