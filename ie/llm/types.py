"""The LLM contract every stage codes against: sampling parameters, one completion, and the transport.

`LLMClient.structured(messages, schema, params, n)` returns one `Completion` per sample; a completion whose
answer never validated has `value=None` and `error` set, with the raw text kept. Nothing here raises for a
bad answer: LLM output is untrusted input and failure is a recorded outcome. A call that got no answer at all
raises `TransportError`: there is nothing to record, and the caller decides what an unfinished task becomes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0
    seed: int | None = 0
    frequency_penalty: float = 0.0
    max_tokens: int = 512
    top_p: float | None = None
    logprobs: bool = False
    top_logprobs: int | None = None  # alternatives per position (OpenAI allows up to 20)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Usage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the server reused from its prefix cache (llama.cpp, vLLM, OpenAI report them).
    prefix_cached_tokens: int = 0

    def add(self, other: Usage) -> Usage:
        for name, value in other.__dict__.items():
            setattr(self, name, getattr(self, name) + value)
        return self

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def new_tokens(self) -> int:
        """Tokens the server computed: prompt tokens not reused from its prefix cache, plus completions."""
        return self.total_tokens - self.prefix_cached_tokens

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Completion(Generic[T]):
    value: T | None
    raw: str
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    attempts: int = 1
    cached: bool = False
    latency_s: float = 0.0
    logprob: float | None = None  # mean token log-probability of the accepted answer, when the backend gives it
    model: str = ""
    truncated: bool = False  # the answer was cut off at max_tokens; `value` holds its complete items

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass
class ChatRequest:
    """What goes over the wire (OpenAI chat.completions); `response_format` carries the JSON schema. With
    `grammar` set (llama.cpp's own field, an llguidance grammar of the same schema) that is sent instead."""
    model: str
    messages: list[dict[str, str]]
    response_format: dict[str, Any] | None
    params: SamplingParams
    n: int = 1
    grammar: str | None = None

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": self.messages, "n": self.n}
        p = self.params
        body.update(temperature=p.temperature, max_tokens=p.max_tokens, frequency_penalty=p.frequency_penalty)
        if p.seed is not None:
            body["seed"] = p.seed
        if p.top_p is not None:
            body["top_p"] = p.top_p
        if p.logprobs or p.top_logprobs:
            body["logprobs"] = True
        if p.top_logprobs:
            body["top_logprobs"] = p.top_logprobs
        if self.grammar is not None:
            body["grammar"] = self.grammar
        elif self.response_format is not None:
            body["response_format"] = self.response_format
        return body


@dataclass
class Choice:
    text: str
    token_logprobs: list[float] | None = None
    finish_reason: str | None = None  # "length": cut off at max_tokens
    top_logprobs: list[dict[str, float]] | None = None  # per position: alternative token -> log-probability


@dataclass
class ChatResponse:
    choices: list[Choice]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prefix_cached_tokens: int = 0
    model: str = ""


class Transport(Protocol):
    """One endpoint (or a fake). Raises `TransportError` when no answer came back (refused, 4xx/5xx, timeout)."""

    name: str

    async def __call__(self, request: ChatRequest) -> ChatResponse: ...


class TransportError(RuntimeError):
    """No answer came back. `retryable`: worth sending again (refused connection, 429, 5xx); `reason`: the short
    cause a run's summary counts ("connection error", "HTTP 401", "read timeout", "context overflow", ...)."""

    def __init__(self, message: str, retryable: bool = True, status: int | None = None, reason: str | None = None,
                 retry_after_s: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.reason = reason or (f"HTTP {status}" if status else "transport error")
        self.retry_after_s = retry_after_s  # the server's Retry-After, in seconds


class NoValidAnswer(TransportError):
    """An answer came back, but none that validated after the re-asks: the record cannot finish, as with no
    answer; the message holds the validation error and the last raw answer."""

    def __init__(self, message: str):
        super().__init__(message, retryable=False, reason="no valid answer")


class RunStopped(RuntimeError):
    """Every later call or record would fail the same way (an endpoint that answers nothing or nothing valid, a
    full disk, another model behind the endpoint): the run stops at once. `reason` is the short cause a failures
    file holds; the message is the one line to show, naming the likely cause and the fix."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason
