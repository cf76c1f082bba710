"""`ie.llm.server_info`: the context an endpoint serves, from llama.cpp's `/props` (here fake_openai.py's)."""
import asyncio

from ie.llm.client import Endpoint
from ie.llm.server_info import endpoint_context
from tests.long_texts import N_CTX, free_port, needs_fake

pytestmark = needs_fake


def test_the_context_comes_from_props_and_an_unreachable_server_reports_none(fake):
    server = fake()
    assert asyncio.run(endpoint_context(Endpoint(server.url, "fake"))) == N_CTX
    closed = f"http://127.0.0.1:{free_port()}/v1"
    assert asyncio.run(endpoint_context(Endpoint(closed, "fake"))) is None
