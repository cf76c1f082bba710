"""What one record's labelling carries: the client, schema and settings, and the transcript and usage it
accumulates. Every LLM call of every method goes through `RecordContext.ask`, so every call is recorded."""
from __future__ import annotations

import json
import random
import zlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel

from ie.claims import AgentId
from ie.config import TaskSchema
from ie.datasets.tokens import token_offsets
from ie.grounding import span_pattern
from ie.llm.choice import ChoiceScores
from ie.llm.client import LLMClient
from ie.llm.types import Completion, SamplingParams, TransportError, Usage
from ie.mentions import MentionProfile, MentionRules
from ie.record_stats import RecordStats
from ie.records import CallLog, Transcript
from ie.schema import Record
from teacher.config import TeacherConfig
from teacher.templates import render

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class RecordContext:
    def __init__(self, record: Record, schema: TaskSchema, client: LLMClient, cfg: TeacherConfig, method: str,
                 mentions: MentionProfile | None = None):
        self.record, self.text, self.schema, self.client, self.cfg = record, record.text, schema, client, cfg
        tokens = record.tokens
        bounds = tuple(token_offsets(tokens)) if tokens and " ".join(tokens) == record.text else ()
        self.rules = MentionRules(mentions or MentionProfile(), bounds)
        profile = self.rules.profile
        # The mentions' pattern when the profile puts spans in the grammar: the answers can only quote the text.
        self.spans = span_pattern(self.text, bounds, profile.max_words) if profile.spans_in_grammar else None
        self.transcript = Transcript(method=method)
        self.usage = Usage()
        self.failed_calls = 0
        self.truncated_calls = 0
        self.ungrounded = 0
        self._choices: dict[str, Completion[ChoiceScores]] = {}  # see `choose`
        self.unanswered: TransportError | None = None  # see `_answered`
        # Speaking order etc. must not depend on Python's per-process hash seed: a re-run hits the call cache.
        self.rng = random.Random(cfg.seed * 1_000_003 + zlib.crc32(record.id.encode("utf-8")))

    @property
    def type_names(self) -> list[str]:
        return list(self.schema.entity_types)

    def params(self, kind: str, scale: int = 1) -> SamplingParams:
        """extract: deterministic agents; debate: the paper's debate sampling; sample: self-consistency."""
        cfg, tokens = self.cfg, self.cfg.max_tokens * scale
        if kind == "debate":
            return SamplingParams(cfg.debate_temperature, cfg.seed, cfg.frequency_penalty, tokens)
        if kind == "sample":
            return SamplingParams(cfg.sc_temperature, cfg.seed, 0.0, tokens, logprobs=True)
        return SamplingParams(cfg.extract_temperature, cfg.seed, 0.0, tokens)

    async def ask(self, template: str, answer: type[T], /, *, role: str, agent: AgentId, params: SamplingParams,
                  n: int = 1, round: int | None = None, own_context: bool = False,
                  **fields: object) -> list[Completion[T]]:
        """Render `template` (with `own_context`, it places the text itself; see `render`), ask, and log each
        completion (valid or not) in the transcript."""
        messages = render(template, self.schema, self.text, own_context=own_context, **fields)
        completions = await self._answered(lambda: self.client.structured(messages, answer, params, n=n,
                                                                          spans=self.spans))
        for i, c in enumerate(completions):
            self._log(CallLog(role=role, agent=str(agent), template=f"{template}.txt", round=round,
                              sample=i if n > 1 else None), c)
        return completions

    async def choose(self, template: str, options: dict[str, list[str]], /, *, role: str, agent: AgentId,
                     **fields: object) -> list[Completion[ChoiceScores]]:
        """Render `template` and read the probabilities of `options` (see `LLMClient.choose`), logged. A question
        the record already asked (the Summarizer and alignment both scoring one span) is answered from the first
        asking: no second call, and nothing counted twice."""
        messages = render(template, self.schema, self.text, own_context=True, **fields)
        key = json.dumps([messages, options], sort_keys=True)
        if key not in self._choices:
            self._choices[key] = await self._answered(
                lambda: self.client.choose(messages, options, SamplingParams(seed=self.cfg.seed)))
            entry = CallLog(role=role, agent=str(agent), template=f"{template}.txt", asked=fields.get("mention"))
            self._log(entry, self._choices[key])
        return [self._choices[key]]

    async def _answered(self, call: Callable[[], Awaitable[R]]) -> R:
        """`call()`, unless an earlier call of this record got no answer: the record cannot finish then, and its
        concurrent agents still running make no further calls."""
        if self.unanswered is not None:
            raise self.unanswered
        try:
            return await call()
        except TransportError as exc:
            self.unanswered = exc
            raise

    def _log(self, entry: CallLog, c: Completion) -> None:
        self.usage.add(c.usage)
        self.failed_calls += not c.ok
        self.truncated_calls += c.truncated
        self.transcript.calls.append(entry.model_copy(update={
            "answer": c.value.model_dump() if c.ok else c.raw, "prompt_tokens": c.usage.prompt_tokens,
            "completion_tokens": c.usage.completion_tokens, "attempts": c.attempts, "cached": c.cached,
            "error": c.error or None, "truncated": True if c.truncated else None}))

    def note(self, message: str) -> None:
        self.transcript.notes.append(message)

    def stats(self, wall_s: float) -> RecordStats:
        settled, usage = [c.settled_by for c in self.transcript.conflicts], self.usage
        return RecordStats(
            calls=usage.calls, cached_calls=usage.cached_calls, prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens, prefix_cached_tokens=usage.prefix_cached_tokens,
            failed_calls=self.failed_calls,
            truncated_calls=self.truncated_calls,
            ungrounded_items=self.ungrounded,
            conflicts=len(settled),
            unresolved_conflicts=sum(s.how == "fallback" for s in settled),
            agents_skipped_by_routing=len(self.transcript.routing.skipped) if self.transcript.routing else 0,
            wall_s=round(wall_s, 3),
        )
