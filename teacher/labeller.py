"""Teacher settings -> a labeller: the endpoint given, or the embedded llama.cpp server, and the LLM client with
the settings' re-asks, retries, timeouts and concurrency. `teacher run`, the Python API (`crossagentie`) and the
bench (`serve.bench_run`) all open their teacher here, so what they ask the endpoint cannot drift apart."""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

from ie.llm.client import Endpoint, LLMClient
from teacher.config import TeacherConfig


@dataclass(frozen=True)
class Labeller:
    """An open teacher: where it is served and the client that asks it."""
    endpoint: Endpoint
    client: LLMClient


def serving(cfg: TeacherConfig, threads: int | None = None) -> contextlib.AbstractContextManager[Endpoint]:
    """`cfg.endpoint` with its model name, key variable and structured output mode; without one, the embedded
    llama.cpp server running `cfg.model` with one slot per concurrent record (`threads`: its CPU threads)."""
    from ie.llm.local import ensure_endpoint

    if cfg.endpoint:
        return ensure_endpoint(cfg.model_name, cfg.endpoint, api_key_env=cfg.api_key_env,
                               structured_output=cfg.structured_output)
    return ensure_endpoint(cfg.model, None, n_parallel=cfg.concurrency, **({"threads": threads} if threads else {}))


def client_for(ep: Endpoint, cfg: TeacherConfig, cache_path: Path | None = None) -> LLMClient:
    """The client of `ep` with `cfg`'s timeouts, concurrency, re-asks and retries; calls cached at `cache_path`."""
    return LLMClient.from_endpoints([replace(ep, timeouts=cfg.timeouts())], cache_path=cache_path,
                                    concurrency=cfg.concurrency, max_parse_retries=cfg.parse_retries,
                                    max_retries=cfg.retries)


@contextlib.asynccontextmanager
async def open_labeller(cfg: TeacherConfig, cache_path: Path | None = None, threads: int | None = None
                        ) -> AsyncIterator[Labeller]:
    """The labeller of `cfg` (see `serving`, `client_for`), closed and its server stopped on exit."""
    with serving(cfg, threads) as ep:
        client = client_for(ep, cfg, cache_path)
        try:
            yield Labeller(ep, client)
        finally:
            await client.aclose()
