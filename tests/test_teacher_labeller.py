"""teacher.labeller: `teacher run`, the bench and the Python API open their teacher through one function, so
the client each builds (endpoint, timeouts, re-asks, retries, concurrency) is the same for the same settings."""
import asyncio

import pytest

from ie.config import load_config, resolve_config_path
from ie.llm.client import LLMClient
from ie.schema import Record, write_records
from serve.bench_config import BenchConfig
from serve.bench_run import run_teacher_methods
from teacher.config import TeacherConfig
from teacher.labeller import serving
from teacher.runner import run

URL = "http://127.0.0.1:9/v1"  # never reached: the client is built, then the test stops


class Built(Exception):
    pass


@pytest.fixture
def built(monkeypatch):
    """Each client built through `LLMClient.from_endpoints`: (endpoints, settings but the cache path)."""
    seen = []

    def capture(cls, endpoints, cache_path=None, **kwargs):
        seen.append((list(endpoints), kwargs))
        raise Built

    monkeypatch.setattr(LLMClient, "from_endpoints", classmethod(capture))
    return seen


def test_teacher_run_the_bench_and_the_api_build_the_same_client(tmp_path, built):
    from crossagentie import extract_batch

    records = [Record(id="a", text="Bo runs .")]
    write_records(tmp_path / "in.jsonl", records)
    with pytest.raises(Built):
        run(TeacherConfig(config="conll04", input=str(tmp_path / "in.jsonl"), method="direct", endpoint=URL,
                          model_name="m", concurrency=3, out=str(tmp_path / "run"), progress=False))
    bench = BenchConfig(config="conll04", methods=["direct"], endpoint=URL, model_name="m", concurrency=3)
    with pytest.raises(Built):
        asyncio.run(run_teacher_methods(["direct"], records, load_config(resolve_config_path("conll04")), bench,
                                        tmp_path / "bench"))
    with pytest.raises(Built):
        extract_batch(["Bo runs ."], schema="conll04", method="direct", endpoint=URL, model_name="m", concurrency=3)
    (endpoints, settings), *others = built
    assert len(others) == 2 and all(o == (endpoints, settings) for o in others)
    assert endpoints[0].url == URL and endpoints[0].timeouts == TeacherConfig().timeouts()
    assert settings == {"concurrency": 3, "max_parse_retries": TeacherConfig().parse_retries,
                        "max_retries": TeacherConfig().retries}


def test_an_endpoint_is_served_as_given_with_its_structured_output_mode():
    with serving(TeacherConfig(endpoint=URL, model_name="m", structured_output="llguidance")) as ep:
        assert (ep.url, ep.model, ep.structured_output) == (URL, "m", "llguidance")
