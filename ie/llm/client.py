"""One async client for any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama).

`structured()` asks for JSON matching a pydantic model (`response_format` json_schema), validates the answer,
keeps the complete items of one cut off at `max_tokens` (`ie.llm.truncated`), otherwise re-asks with the
validation error a bounded number of times, and returns a `Completion` either way. A call that got no answer
raises `TransportError`: refused connections, 429 and 5xx are first retried with backoff (or after the server's
`Retry-After`, up to `MAX_RETRY_AFTER_S`), moving to the next endpoint when several are given; a 4xx, a context
overflow, a body that is no chat completion or a call past its deadline is not re-sent. Every call goes through
the sqlite call cache when one is configured; only answers that validated are kept there.

A client stops its run (`RunStopped`) when re-asking cannot help: the endpoint answered no call within
`Timeouts.first_answer_s`, most answers never validated (it ignores the structured-output request), or it
answers as another model than the one its earlier answers in this folder came from (`served_as`).
"""
from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar, get_origin

from pydantic import BaseModel, ValidationError

from ie.llm.cache import CallCache, cache_key
from ie.llm.choice import TOP_LOGPROBS, ChoiceScores, option_scores
from ie.llm.truncated import salvage_candidates
from ie.llm.types import (
    ChatRequest,
    ChatResponse,
    Choice,
    Completion,
    RunStopped,
    SamplingParams,
    Transport,
    TransportError,
    Usage,
)

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger(__name__)
MAX_RETRY_AFTER_S = 60.0  # the longest Retry-After honoured; a longer one is waited this long
# A run stops when, after at least this many final answers, more than half were no JSON at all.
INVALID_STOP_AFTER = 8

INVALID_ANSWER_FEEDBACK = (
    "Your previous answer was not valid JSON for the required schema: {error}\n"
    "Answer again with only the JSON object."
)


STRUCTURED_OUTPUTS = ("json_schema", "llguidance")


def _opt(default: float, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Timeouts:
    """How long one call may wait: `connect_s` to reach the server, then `read_s(max_tokens)` for the answer.

    Requests are not streamed: every OpenAI-compatible server reports usage, cached prefix tokens and logprobs
    in one final body alike. So the read timeout is what the request asks for: a fixed allowance for the queue
    and the prompt, plus `max_tokens` at a generation speed floor; a slow but healthy server stays within it,
    and a hung one is given up after that bound, not re-sent (it would cost the same bound again). The bound is
    a wall-clock deadline from sending to the last byte (`deadline_s`): a server trickling bytes cannot stretch
    it. Until the endpoint has answered some call, `first_answer_s` bounds every call instead: a server that
    accepts and never answers stops the run then, not after minutes.
    """
    connect_s: float = _opt(5.0, "seconds to open a connection to the endpoint")
    first_token_s: float = _opt(60.0, "seconds allowed for queueing and reading the prompt, before any token")
    min_tokens_per_s: float = _opt(1.0, "slowest generation speed waited for (a loaded CPU server): a call's "
                                   "read timeout is the first-token allowance + max_tokens / this")
    first_answer_s: float = _opt(30.0, "seconds to wait for the endpoint's first answer of a run: when no call "
                                 "has been answered by then, the run stops (a server that never answers)")

    def __post_init__(self) -> None:
        for f in fields(self):
            if not getattr(self, f.name) > 0:
                raise ValueError(f"timeouts.{f.name}: must be above 0, got {getattr(self, f.name)}")

    def read_s(self, max_tokens: int) -> float:
        return self.first_token_s + max_tokens / self.min_tokens_per_s

    def deadline_s(self, max_tokens: int) -> float:
        """The whole call's wall-clock bound, connecting included."""
        return self.connect_s + self.read_s(max_tokens)

    @classmethod
    def help(cls, name: str) -> str:
        return next(f.metadata["help"] for f in fields(cls) if f.name == name)


def redact(text: str, *secrets: str | None) -> str:
    """`text` with every secret's value replaced: a server may echo the request's key in its error text."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


def api_key(api_key_env: str | None) -> str:
    """The key held by the variable NAMED `api_key_env` ("" when none)."""
    return os.environ.get(api_key_env, "") if api_key_env else ""


@dataclass(frozen=True)
class Endpoint:
    url: str
    model: str
    api_key_env: str | None = None  # the NAME of an env var; the key itself is never stored or logged
    timeouts: Timeouts = Timeouts()
    extra_body: dict[str, Any] = field(default_factory=dict)
    # "json_schema": `response_format` (OpenAI, vLLM, any server). "llguidance": llama.cpp's `grammar` field
    # with an llguidance JSON grammar that fixes the separators, i.e. compact JSON (see `llguidance_grammar`).
    structured_output: str = "json_schema"

    def __post_init__(self) -> None:
        if self.structured_output not in STRUCTURED_OUTPUTS:
            raise ValueError(f"endpoint {self.url}: structured_output must be one of {STRUCTURED_OUTPUTS}, "
                             f"got {self.structured_output!r}")


class OpenAITransport:
    """One OpenAI-compatible endpoint through the official SDK (its own retries off: ours move endpoints)."""

    def __init__(self, endpoint: Endpoint):
        from openai import AsyncOpenAI

        self.endpoint = endpoint
        self.name = f"{endpoint.url}#{endpoint.model}"
        self._key = api_key(endpoint.api_key_env)
        self._sdk = AsyncOpenAI(base_url=endpoint.url, api_key=self._key or "no-key", max_retries=0)

    async def __call__(self, request: ChatRequest) -> ChatResponse:
        import openai

        body = request.body()
        body["model"] = self.endpoint.model
        extra = dict(self.endpoint.extra_body)
        if "grammar" in body:  # not an OpenAI parameter: the SDK passes it through extra_body
            extra["grammar"] = body.pop("grammar")
        t = self.endpoint.timeouts
        read_s, deadline_s = t.read_s(request.params.max_tokens), t.deadline_s(request.params.max_tokens)
        try:
            resp = await asyncio.wait_for(self._sdk.chat.completions.create(
                **body, extra_body=extra or None, timeout=openai.Timeout(read_s, connect=t.connect_s)), deadline_s)
        except asyncio.TimeoutError:
            raise TransportError(f"no whole answer within {deadline_s:g} s (the call's deadline for this "
                                 "max_tokens)", retryable=False, reason="read timeout") from None
        except openai.APIError as exc:
            raise self._error(exc, read_s) from None
        return self._response(resp)

    def _response(self, resp: Any) -> ChatResponse:
        """The SDK's answer as a ChatResponse, its texts stripped of the key's value; a body that is no chat
        completion (an HTML page, `{}`, no choices) is a TransportError saying so."""
        if isinstance(resp, str):  # the SDK's reading of a body that is no JSON (an HTML error page)
            raise TransportError(f"the endpoint's answer is no JSON chat completion: {redact(resp, self._key)[:80]!r}",
                                 retryable=False, reason="bad response")
        try:
            out = _from_sdk(resp)
        except (AttributeError, TypeError, ValueError) as exc:
            detail = redact(str(exc), self._key)[:200]
            raise TransportError(f"the endpoint's answer is no chat completion ({type(exc).__name__}: {detail})",
                                 retryable=False, reason="bad response") from None
        if not out.choices:
            raise TransportError("the endpoint's answer holds no choices", retryable=False, reason="bad response")
        return replace(out, choices=[replace(c, text=redact(c.text, self._key)) for c in out.choices])

    def _error(self, exc: Exception, read_s: float) -> TransportError:
        """The SDK's exception as a TransportError whose text holds no key."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            if type(exc.__cause__).__name__ == "ConnectTimeout":  # httpx and httpx2 alike
                return TransportError(f"no connection within {self.endpoint.timeouts.connect_s:g} s",
                                      reason="connect timeout")
            return TransportError(f"no answer within {read_s:g} s (the read timeout for this max_tokens)",
                                  retryable=False, reason="read timeout")
        if isinstance(exc, openai.APIConnectionError):
            return TransportError(f"{type(exc).__name__}: {redact(str(exc), self._key)}", reason="connection error")
        message = redact(getattr(exc, "message", "") or str(exc), self._key)
        status = getattr(exc, "status_code", None)
        if status is None:
            return TransportError(f"{type(exc).__name__}: {message}", retryable=False, reason="bad response")
        if status == 400 and "context" in message.lower():
            return TransportError(f"HTTP 400: {message}", False, status, reason="context overflow")
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        return TransportError(f"HTTP {status}: {message}", status == 429 or status >= 500, status,
                              reason="HTTP 5xx" if status >= 500 else f"HTTP {status}",
                              retry_after_s=retry_after_s(headers.get("retry-after")))

    async def aclose(self) -> None:
        await self._sdk.close()


def retry_after_s(value: str | None) -> float | None:
    """A Retry-After header's wait in seconds (a number of seconds or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def _from_sdk(resp: Any) -> ChatResponse:
    choices = []
    for ch in resp.choices:
        lps = tops = None
        if getattr(ch, "logprobs", None) is not None and ch.logprobs.content:
            lps = [t.logprob for t in ch.logprobs.content]
            if any(t.top_logprobs for t in ch.logprobs.content):
                tops = [{a.token: a.logprob for a in t.top_logprobs or ()} for t in ch.logprobs.content]
        choices.append(Choice(text=ch.message.content or "", token_logprobs=lps, finish_reason=ch.finish_reason,
                              top_logprobs=tops))
    usage = resp.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return ChatResponse(
        choices=choices,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        prefix_cached_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
        model=resp.model or "",
    )


# Bounds that llama.cpp's GBNF turns into deeply nested optional grammar rules, which slow sampling about 20x:
# left out of the wire schema; the answer models still enforce them when validating.
_GRAMMAR_COSTLY_KEYS = frozenset({"maxLength", "minLength", "maxItems", "minItems"})


# Marks a string field whose value must be a span of the text (a mention): `with_spans` gives it the text's
# span pattern (`ie.grounding.span_pattern`), or drops the mark when the call has none.
SPAN_KEY = "x-span"


def with_spans(node: Any, spans: str | None) -> Any:
    """The JSON schema with each span-marked field given `pattern: spans` (None: the mark dropped)."""
    if isinstance(node, dict):
        out = {k: with_spans(v, spans) for k, v in node.items() if k != SPAN_KEY}
        if node.get(SPAN_KEY) and spans is not None:
            out["pattern"] = spans
        return out
    if isinstance(node, list):
        return [with_spans(v, spans) for v in node]
    return node


def _wire_schema(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _wire_schema(v) for k, v in node.items() if k not in _GRAMMAR_COSTLY_KEYS}
    if isinstance(node, list):
        return [_wire_schema(v) for v in node]
    return node


def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The `response_format` of `schema`, without span patterns: llama.cpp's GBNF turns one into nested optional
    rules that stall sampling (no answer within the read timeout on a one-sentence pattern)."""
    wire = _wire_schema(with_spans(schema.model_json_schema(), None))
    return {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": wire}}


def _closed(node: Any) -> Any:
    """Every object schema with `additionalProperties: false`: a grammar otherwise lets the model add keys."""
    if isinstance(node, dict):
        node = {k: _closed(v) for k, v in node.items()}
        if node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        return node
    if isinstance(node, list):
        return [_closed(v) for v in node]
    return node


# Compact JSON: the small models pretty-print under a whitespace-flexible grammar, spending about a third of their
# tokens on indentation. ", " and ": " rather than "," and ":": with no spaces at all qwen2.5-0.5b answers `[]`
# to questions it answers when spaced.
SPACED_SEPARATORS = (", ", ": ")


class TightAnswer(BaseModel):
    """Base of an answer model whose writer was trained on JSON without spaces (the student): its llguidance
    grammar fixes "," and ":", a quarter fewer tokens than the spaced separators zero-shot models need."""
    separators: ClassVar[tuple[str, str]] = (",", ":")


@functools.lru_cache(maxsize=256)
def llguidance_grammar(schema: type[BaseModel], spans: str | None = None) -> str:
    """The schema as an llguidance grammar for llama.cpp's `grammar` field: separators fixed, no extra keys,
    length and item bounds kept (llguidance enforces them at no measurable cost, unlike GBNF); `spans`: the
    pattern of a mention (see `with_spans`)."""
    item, key = TightAnswer.separators if issubclass(schema, TightAnswer) else SPACED_SEPARATORS
    compact = {"whitespace_flexible": False, "item_separator": item, "key_separator": key}
    wire = {**_closed(with_spans(schema.model_json_schema(), spans)), "x-guidance": compact}
    return "%llguidance {}\nstart: %json " + json.dumps(wire, separators=(",", ":"))


def _validation_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _salvaged(raw: str, schema: type[T]) -> T | None:
    """A cut-off answer's complete items: the longest closed prefix that is a valid answer (`ie.llm.truncated`),
    a list the cut came before counted empty (a joint answer cut in its entities has no relations yet)."""
    lists = [name for name, f in schema.model_fields.items() if f.is_required() and get_origin(f.annotation) is list]
    for closed in salvage_candidates(raw):
        try:
            value = json.loads(closed)
            if isinstance(value, dict):
                value = {**{name: [] for name in lists}, **value}
            return schema.model_validate(value)
        except (ValidationError, ValueError):
            continue
    return None


def _parsed(choice: Choice, schema: type[T]) -> tuple[T | None, bool, str]:
    """(the answer, whether it was cut off, the validation error): a cut-off answer's complete items count."""
    try:
        return schema.model_validate_json(choice.text), False, ""
    except ValidationError as exc:
        value = _salvaged(choice.text, schema) if choice.finish_reason == "length" else None
        return value, value is not None, "" if value is not None else _validation_summary(exc)


def _scores(resp: ChatResponse, options: dict[str, Sequence[str]]) -> ChoiceScores | None:
    tops = resp.choices[0].top_logprobs
    return option_scores(tops[0], options) if tops else None


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None


class LLMClient:
    def __init__(
        self,
        transports: Sequence[Transport],
        cache: CallCache | None = None,
        concurrency: int = 4,
        max_retries: int = 4,
        max_parse_retries: int = 2,
        backoff_s: float = 1.0,
        model: str | None = None,
        structured_output: str = "json_schema",
        first_answer_s: float | None = None,
        served_as: str | None = None,
    ):
        """`first_answer_s`: see `Timeouts.first_answer_s` (None: no such bound). `served_as`: the model name the
        endpoint answered as when this run's earlier answers were made; answering as another stops the run."""
        if not transports:
            raise ValueError("LLMClient needs at least one endpoint")
        self.transports = list(transports)
        self.cache = cache
        self.max_retries = max_retries
        self.max_parse_retries = max_parse_retries
        self.backoff_s = backoff_s
        self.model = model or self.transports[0].name
        if structured_output not in STRUCTURED_OUTPUTS:
            raise ValueError(f"structured_output must be one of {STRUCTURED_OUTPUTS}, got {structured_output!r}")
        self.structured_output = structured_output
        self.usage = Usage()
        self.failures = 0
        self.first_answer_s, self.served_as = first_answer_s, served_as
        self.served_model: str | None = None  # the model name the endpoint's first fresh answer gave
        self.answers = self.not_json = 0  # final answers of `structured`, and those that were no JSON at all
        self._answered = False  # some call got an answer (the endpoint is alive)
        self._semaphore = asyncio.Semaphore(concurrency)
        self._next = itertools.cycle(range(len(self.transports)))

    @classmethod
    def from_endpoints(
        cls, endpoints: Sequence[Endpoint], cache_path: str | Path | None = None, **kwargs: Any
    ) -> LLMClient:
        cache = CallCache(cache_path) if cache_path else None
        model = "|".join(sorted({e.model for e in endpoints}))
        modes = {e.structured_output for e in endpoints}
        if len(modes) > 1:
            raise ValueError(f"endpoints mix structured outputs {sorted(modes)}: one request must suit them all")
        kwargs.setdefault("first_answer_s", min(e.timeouts.first_answer_s for e in endpoints))
        return cls([OpenAITransport(e) for e in endpoints], cache=cache, model=model, structured_output=modes.pop(),
                   **kwargs)

    async def structured(
        self,
        messages: list[dict[str, str]],
        schema: type[T],
        params: SamplingParams = SamplingParams(),
        n: int = 1,
        use_cache: bool = True,
        spans: str | None = None,
    ) -> list[Completion[T]]:
        """n validated answers; sample i uses seed+i so that samples differ and each is cached on its own.
        `spans`: the pattern every mention field of `schema` must match (`ie.grounding.span_pattern`), sent in
        the llguidance grammar only (see `response_format`)."""
        jobs = [self._answer(messages, schema, params, i, use_cache, spans) for i in range(n)]
        return list(await asyncio.gather(*jobs))

    async def choose(self, messages: list[dict[str, str]], options: dict[str, Sequence[str]],
                     params: SamplingParams = SamplingParams(), use_cache: bool = True) -> Completion[ChoiceScores]:
        """Probabilities of `options` (option -> its words) as the one-token answer to `messages`. Not ok when
        the endpoint returns no token alternatives or none of them is an option's word."""
        params = replace(params, max_tokens=1, top_logprobs=TOP_LOGPROBS, logprobs=True)
        request = ChatRequest(model=self.model, messages=list(messages), response_format=None, params=params)
        started = time.perf_counter()
        resp, cached, latency = await self._call(request, 0, use_cache, lambda r: _scores(r, options) is not None)
        usage = Usage(1, int(cached), resp.prompt_tokens, resp.completion_tokens, resp.prefix_cached_tokens)
        self.usage.add(usage)
        choice = resp.choices[0]
        scores = _scores(resp, options)
        error = None
        if scores is None:
            self.failures += 1
            error = ("the endpoint returned no token alternatives (top_logprobs)" if not choice.top_logprobs
                     else f"no option word among the top {TOP_LOGPROBS} tokens")
        elapsed = latency if cached else time.perf_counter() - started
        return Completion(scores, choice.text, error, usage, 1, cached, elapsed, model=self.model)

    async def _answer(
        self, messages: list[dict[str, str]], schema: type[T], params: SamplingParams, index: int, use_cache: bool,
        spans: str | None = None,
    ) -> Completion[T]:
        if params.seed is not None and index:
            params = replace(params, seed=params.seed + index)
        fmt = response_format(schema)
        grammar = llguidance_grammar(schema, spans) if self.structured_output == "llguidance" else None
        convo, usage, raw, error = list(messages), Usage(), "", ""
        started, all_cached = time.perf_counter(), True
        for attempt in range(1, self.max_parse_retries + 2):
            request = ChatRequest(model=self.model, messages=convo, response_format=fmt, params=params,
                                  grammar=grammar)
            resp, cached, latency = await self._call(request, index, use_cache,
                                                     lambda r: _parsed(r.choices[0], schema)[0] is not None)
            all_cached &= cached
            step = Usage(1, int(cached), resp.prompt_tokens, resp.completion_tokens, resp.prefix_cached_tokens)
            usage.add(step)
            self.usage.add(step)
            choice = resp.choices[0]
            raw = choice.text
            value, truncated, error = _parsed(choice, schema)
            if value is None:
                convo = list(messages) + [
                    {"role": "assistant", "content": raw},
                    {"role": "user", "content": INVALID_ANSWER_FEEDBACK.format(error=error)},
                ]
                continue
            elapsed = latency if all_cached else time.perf_counter() - started
            self.answers += 1
            return Completion(value, raw, None, usage, attempt, all_cached, elapsed,
                              _mean(choice.token_logprobs), model=self.model, truncated=truncated)
        self.failures += 1
        self.answers += 1
        self._stop_if_mostly_not_json(raw)
        return Completion(None, raw, f"invalid answer after {attempt} attempts: {error}", usage, attempt,
                          all_cached, time.perf_counter() - started, model=self.model)

    def _stop_if_mostly_not_json(self, raw: str) -> None:
        """Count an answer that never validated and is no JSON at all (prose, not an answer off the schema, such
        as a list past a cap `response_format` does not carry); stop the run when most answers so far were such:
        the endpoint ignores what it is asked for (invalid answers are never cached: a fixed one is asked again)."""
        try:
            json.loads(raw)
            return
        except ValueError:
            self.not_json += 1
        if self.answers < INVALID_STOP_AFTER or 2 * self.not_json <= self.answers:
            return
        ignored, fix = (("the llguidance `grammar` field", "--structured-output json_schema")
                        if self.structured_output == "llguidance" else
                        ("response_format", "--structured-output llguidance (a llama.cpp server), or a model and "
                         "server that follow JSON schemas"))
        raise RunStopped(f"{self.not_json} of {self.answers} answers were no JSON at all (last: {raw[:80]!r}): the "
                         f"endpoint likely ignores {ignored}; try {fix}", "no valid answer")

    async def _call(self, request: ChatRequest, index: int, use_cache: bool, valid: Callable[[ChatResponse], bool]
                    ) -> tuple[ChatResponse, bool, float]:
        """One wire call (or cache hit): the response, whether it was cached, and its latency. Only a response
        that `valid` accepts is kept in (or taken from) the cache, so a re-run asks again what was wrong."""
        key = cache_key(request.body(), index)
        if self.cache is not None and use_cache:
            hit = self.cache.get(key)
            if hit is not None and valid(resp := _response_from_json(hit)):
                return resp, True, hit.get("latency_s", 0.0)
        resp, latency = await self._send(request)
        if self.cache is not None and valid(resp):
            self.cache.put(key, self.model, {**_response_to_json(resp), "latency_s": latency})
        return resp, False, latency

    async def _send(self, request: ChatRequest) -> tuple[ChatResponse, float]:
        """The endpoints' answer; retryable failures are re-sent after the server's Retry-After (at most
        `MAX_RETRY_AFTER_S`) or with backoff (none after the last try)."""
        for attempt in range(self.max_retries + 1):
            transport = self.transports[next(self._next)]
            async with self._semaphore:
                t0 = time.perf_counter()
                try:
                    resp = await self._alive(transport(request), transport)
                    self._note_model(resp, transport)
                    return resp, time.perf_counter() - t0
                except TransportError as exc:
                    last = exc
            if not last.retryable or attempt == self.max_retries:
                break
            wait = self.backoff_s * (2**attempt) * (0.5 + random.random())
            if last.retry_after_s is not None:
                wait = min(max(last.retry_after_s, wait), MAX_RETRY_AFTER_S)
            await asyncio.sleep(wait)
        if attempt:
            raise TransportError(f"{last} (after {attempt + 1} tries)", last.retryable, last.status, last.reason)
        raise last

    async def _alive(self, call: Awaitable[ChatResponse], transport: Transport) -> ChatResponse:
        """`call`'s answer; until the endpoint has answered some call, the run stops when none came back within
        `first_answer_s` (a call still waiting when another is answered waits on, within its own deadline)."""
        if self._answered or self.first_answer_s is None:
            return await call
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait({task}, timeout=self.first_answer_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done and not self._answered:
            task.cancel()
            raise RunStopped(f"{transport.name.split('#')[0]} answered no call within {self.first_answer_s:g} s "
                             "(--timeout-first-answer-s): is the server up, and serving this model?", "no answer")
        try:
            return await task
        except TransportError as exc:
            self._answered |= exc.status is not None or exc.reason == "bad response"  # the server answered
            raise

    def _note_model(self, resp: ChatResponse, transport: Transport) -> None:
        """Remember the model name the endpoint answers as; another name than asked for is said once, and one
        other than this folder's earlier answers came from (`served_as`) stops the run."""
        self._answered = True
        asked = getattr(getattr(transport, "endpoint", None), "model", None)
        if not resp.model or asked is None or self.served_model is not None:
            return
        self.served_model = resp.model
        if self.served_as is not None and resp.model != self.served_as:
            raise RunStopped(f"the endpoint answers as model {resp.model!r}, but this folder's labels came from "
                             f"{self.served_as!r}: use another --out, or delete its predictions.jsonl to label "
                             "every record again with this model", "model changed")
        if resp.model != asked:
            log.warning("the endpoint answers as model %r, not the %r asked for; runs record %r", resp.model, asked,
                        resp.model)

    async def aclose(self) -> None:
        for t in self.transports:
            close = getattr(t, "aclose", None)
            if close:
                await close()
        if self.cache is not None:
            self.cache.close()


def _response_to_json(resp: ChatResponse) -> dict[str, Any]:
    return {
        "choices": [{"text": c.text, "token_logprobs": c.token_logprobs, "finish_reason": c.finish_reason,
                     "top_logprobs": c.top_logprobs} for c in resp.choices],
        "prompt_tokens": resp.prompt_tokens,
        "completion_tokens": resp.completion_tokens,
        "prefix_cached_tokens": resp.prefix_cached_tokens,
        "model": resp.model,
    }


def _response_from_json(data: dict[str, Any]) -> ChatResponse:
    return ChatResponse(
        choices=[Choice(**c) for c in data["choices"]],
        prompt_tokens=data["prompt_tokens"],
        completion_tokens=data["completion_tokens"],
        prefix_cached_tokens=data.get("prefix_cached_tokens", 0),
        model=data.get("model", ""),
    )

