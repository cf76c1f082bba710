"""What an endpoint says about itself: the context one request may use, from llama.cpp's `GET /props`
(`default_generation_settings.n_ctx`, the context of one server slot). Other servers have no such route;
they answer None and the caller falls back to a flag or a default (`ie.windows.context_tokens`)."""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from ie.llm.client import Endpoint, LLMClient

log = logging.getLogger(__name__)
PROPS_TIMEOUT_S = 5.0


async def endpoint_context(endpoint: Endpoint) -> int | None:
    """The endpoint's context per request, or None when it does not report one (not llama.cpp, unreachable)."""
    import httpx

    root = endpoint.url.rstrip("/").removesuffix("/v1")
    key = os.environ.get(endpoint.api_key_env, "") if endpoint.api_key_env else ""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient(timeout=PROPS_TIMEOUT_S) as http:
            resp = await http.get(f"{root}/props", headers=headers)
        n_ctx = resp.json()["default_generation_settings"]["n_ctx"] if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        n_ctx = None
    if not isinstance(n_ctx, int) or isinstance(n_ctx, bool) or n_ctx < 1:
        log.debug("%s reports no context size (GET /props)", root)
        return None
    return n_ctx


async def served_context(endpoints: Sequence[Endpoint]) -> int | None:
    """The smallest context the endpoints report (a request may reach any of them), None if none reports."""
    known = [n for n in [await endpoint_context(e) for e in endpoints] if n is not None]
    return min(known) if known else None


def client_endpoints(client: LLMClient) -> list[Endpoint]:
    """The endpoints behind a client's transports (none for a scripted transport)."""
    return [t.endpoint for t in client.transports if isinstance(getattr(t, "endpoint", None), Endpoint)]
