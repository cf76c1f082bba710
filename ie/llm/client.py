"""One async client for any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama).

`structured()` asks for JSON matching a pydantic model (`response_format` json_schema), validates the answer,
keeps the complete items of one cut off at `max_tokens` (`ie.llm.truncated`), otherwise re-asks with the
validation error a bounded number of times, and returns a `Completion` either way. A call that got no answer
raises `TransportError`: refused connections, 429 and 5xx are first retried with backoff, moving to the next
endpoint when several are given; a 4xx, a context overflow or a read timeout is not re-sent. Every call goes
through the sqlite call cache when one is configured; only answers that validated are kept there.
"""
from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from ie.llm.cache import CallCache, cache_key
from ie.llm.choice import TOP_LOGPROBS, ChoiceScores, option_scores
from ie.llm.truncated import salvage_candidates
from ie.llm.types import ChatRequest, ChatResponse, Choice, Completion, SamplingParams, Transport, TransportError, Usage

T = TypeVar("T", bound=BaseModel)

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
    and a hung one is given up after that bound, not re-sent (it would cost the same bound again).
    """
    connect_s: float = _opt(5.0, "seconds to open a connection to the endpoint")
    first_token_s: float = _opt(60.0, "seconds allowed for queueing and reading the prompt, before any token")
    min_tokens_per_s: float = _opt(1.0, "slowest generation speed waited for (a loaded CPU server): a call's "
                                   "read timeout is the first-token allowance + max_tokens / this")

    def __post_init__(self) -> None:
        for f in fields(self):
            if not getattr(self, f.name) > 0:
                raise ValueError(f"timeouts.{f.name}: must be above 0, got {getattr(self, f.name)}")

    def read_s(self, max_tokens: int) -> float:
        return self.first_token_s + max_tokens / self.min_tokens_per_s

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
        read_s = t.read_s(request.params.max_tokens)
        try:
            resp = await self._sdk.chat.completions.create(
                **body, extra_body=extra or None, timeout=openai.Timeout(read_s, connect=t.connect_s))
        except openai.APIError as exc:
            raise self._error(exc, read_s) from None
        return _from_sdk(resp)

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
        return TransportError(f"HTTP {status}: {message}", status == 429 or status >= 500, status,
                              reason="HTTP 5xx" if status >= 500 else f"HTTP {status}")

    async def aclose(self) -> None:
        await self._sdk.close()


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
    """A cut-off answer's complete items: the longest closed prefix that is a valid answer (`ie.llm.truncated`)."""
    for closed in salvage_candidates(raw):
        try:
            return schema.model_validate_json(closed)
        except ValidationError:
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
    ):
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
            return Completion(value, raw, None, usage, attempt, all_cached, elapsed,
                              _mean(choice.token_logprobs), model=self.model, truncated=truncated)
        self.failures += 1
        return Completion(None, raw, f"invalid answer after {attempt} attempts: {error}", usage, attempt,
                          all_cached, time.perf_counter() - started, model=self.model)

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
        """The endpoints' answer; retryable failures are re-sent with backoff (none after the last try)."""
        for attempt in range(self.max_retries + 1):
            transport = self.transports[next(self._next)]
            async with self._semaphore:
                t0 = time.perf_counter()
                try:
                    return await transport(request), time.perf_counter() - t0
                except TransportError as exc:
                    last = exc
            if not last.retryable or attempt == self.max_retries:
                break
            await asyncio.sleep(self.backoff_s * (2**attempt) * (0.5 + random.random()))
        if attempt:
            raise TransportError(f"{last} (after {attempt + 1} tries)", last.retryable, last.status, last.reason)
        raise last

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

