"""Fixtures the tests of several modules share: the embedded smollm2-135m server (slow tests only), the bench's
scripted endpoints, fake_openai.py for long texts, and the tiny student model."""
import json
from pathlib import Path

import pytest

from ie.config import load_config, resolve_config_path
from ie.datasets import load_split
from ie.llm.client import Endpoint, LLMClient
from ie.llm.fake import ScriptedTransport
from ie.schema import write_records
from serve import bench_run
from tests.bench_rows import minimal_answer
from tests.long_texts import Fake
from tests.tiny_student import build_tiny_model, chat


@pytest.fixture(scope="session")
def endpoint():
    """The embedded smollm2-135m server, started once for the slow tests that ask it."""
    from ie.llm.local import LocalServer

    with LocalServer("smollm2-135m", n_parallel=2, n_ctx=1024) as server:
        yield Endpoint(server.base_url, server.model_name)


@pytest.fixture(scope="session")
def sentences(tmp_path_factory):
    """The two shortest of the first 20 CoNLL04 dev sentences, as a JSONL input."""
    dev = load_split(load_config(resolve_config_path("conll04")), "dev")
    short = sorted(dev[:20], key=lambda r: len(r.text))[:2]
    path = tmp_path_factory.mktemp("data") / "two.jsonl"
    write_records(path, short)
    return path


@pytest.fixture
def fake_endpoints(monkeypatch):
    """Every endpoint the bench opens: one scripted transport giving the smallest valid answer (its `script` can
    be changed, its `requests` counted)."""
    transport = ScriptedTransport(minimal_answer)
    monkeypatch.setattr(bench_run.LLMClient, "from_endpoints",
                        classmethod(lambda cls, eps, cache_path=None, **kw: LLMClient([transport], **kw)))
    return transport


@pytest.fixture
def fake(tmp_path):
    """Starts fake_openai.py servers (`tests.long_texts.Fake`) for one test and stops them after it."""
    servers = []

    def start(*args):
        servers.append(Fake(tmp_path, *args))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def chat_jsonl(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "train.jsonl"
    path.write_text("\n".join(json.dumps(chat()) for _ in range(8)) + "\n")
    return path
