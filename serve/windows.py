"""The student on long texts: how many tokens of text its prompt leaves at the endpoint (`ie.windows` splits a
longer text and merges the windows' labels)."""
from __future__ import annotations

from ie.config import TaskSchema
from ie.llm.client import LLMClient
from ie.llm.server_info import client_endpoints, served_context
from ie.student_format import build_messages
from ie.windows import context_tokens, estimate_tokens, text_budget


async def student_budget(client: LLMClient, schema: TaskSchema, max_tokens: int, flag: int | None) -> int | None:
    """Tokens of text one request may hold: the endpoint's context (`/props`, else `flag`; None when neither says)
    less the student prompt around an empty text and `max_tokens` of answer."""
    context = context_tokens(await served_context(client_endpoints(client)), flag)
    prompt = sum(estimate_tokens(m["content"]) for m in build_messages("", schema))
    return text_budget(context, prompt, max_tokens)
