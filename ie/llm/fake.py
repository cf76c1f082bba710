"""A scripted transport for deterministic tests of everything above the wire (parsing, retries, debate logic)."""
from __future__ import annotations

import math
from collections.abc import Callable

from ie.llm.types import ChatRequest, ChatResponse, Choice

Script = Callable[[ChatRequest], "str | ChatResponse | Exception"]


def schema_name(request: ChatRequest) -> str:
    rf = request.response_format or {}
    return rf.get("json_schema", {}).get("name", "")


class ScriptedTransport:
    """Answers each request with `script(request)`: a raw string, a full ChatResponse, or an exception to raise.

    Token usage is estimated as whitespace words so that accounting paths are exercised too.
    """

    def __init__(self, script: Script, name: str = "scripted"):
        self.script = script
        self.name = name
        self.requests: list[ChatRequest] = []

    async def __call__(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        answer = self.script(request)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, ChatResponse):
            return answer
        prompt_words = sum(len(m["content"].split()) for m in request.messages)
        return ChatResponse(
            choices=[Choice(text=answer)],
            prompt_tokens=prompt_words,
            completion_tokens=len(answer.split()),
            model=request.model,
        )


def next_token_response(probabilities: dict[str, float], prompt_tokens: int = 10) -> ChatResponse:
    """A one-token answer whose alternatives are `probabilities` (token -> p), as a server with top_logprobs
    returns it: what `LLMClient.choose` reads."""
    top = {token: math.log(p) for token, p in probabilities.items()}
    return ChatResponse(choices=[Choice(text=max(top, key=top.__getitem__), token_logprobs=[max(top.values())],
                                        top_logprobs=[top])], prompt_tokens=prompt_tokens, completion_tokens=1)
