"""The teacher on long texts (`teacher.windowed`): a 3,000-word text labelled window by window against
fake_openai.py without a refused request, then (slow) a text longer than the embedded server's context."""
import dataclasses

import httpx
import pytest

from ie.config import load_config, resolve_config_path
from ie.llm.client import LLMClient
from ie.records import read_labelled
from ie.schema import Record, write_records
from ie.windows import split_windows
from teacher.config import TeacherConfig
from teacher.runner import run
from teacher.windowed import method_budget
from tests.long_texts import MAX_CHARS, SCHEMA, long_record, needs_fake, served_budget, window_gold

pytestmark = needs_fake


def test_the_teacher_labels_a_long_text_in_windows_without_a_refused_request(fake, tmp_path):
    gold = long_record()
    write_records(tmp_path / "in.jsonl", [gold.unlabelled()])
    plain = fake()
    cfg = TeacherConfig(input=str(tmp_path / "in.jsonl"), method="one-step", out=str(tmp_path / "out"),
                        progress=False, endpoint=plain.url, model_name="fake", window_tokens=64)
    windows = split_windows(gold, served_budget(plain.url, method_budget, cfg, SCHEMA), cfg.window_tokens)
    assert len(windows) > 5 and len(gold.text) > MAX_CHARS
    write_records(tmp_path / "oracle.jsonl", window_gold(gold, windows))
    server = fake("--oracle", str(tmp_path / "oracle.jsonl"))
    run(dataclasses.replace(cfg, endpoint=server.url))
    assert server.statuses() == ["200"] * len(windows)  # one call a window, none refused
    (pred,) = read_labelled(tmp_path / "out" / "predictions.jsonl")  # offsets validated against the text
    assert [e.key for e in pred.entities] == [e.key for e in gold.entities]
    assert [(r.head, r.tail, r.type) for r in pred.relations] == [(r.head, r.tail, r.type) for r in gold.relations]
    debate, stats = pred.debate, pred.stats
    assert [(w.start, w.end) for w in debate.windows] == [(w.start, w.end) for w in windows]
    assert sorted({c.window for c in debate.calls}) == list(range(len(windows)))
    assert stats.windows == len(windows) and stats.calls == len(windows) and stats.failed_calls == 0


@pytest.mark.slow
def test_a_text_longer_than_the_embedded_servers_context_is_labelled_by_smollm2(tmp_path):
    from ie.datasets import load_split
    from ie.llm.local import LocalServer

    dev = load_split(load_config(resolve_config_path("conll04")), "dev")
    text = " ".join(r.text for r in dev[:32])
    write_records(tmp_path / "in.jsonl", [Record(id="doc", text=text)])
    cfg = TeacherConfig(input=str(tmp_path / "in.jsonl"), method="direct", out=str(tmp_path / "out"),
                        progress=False, max_tokens=48, parse_retries=0, window_tokens=400, concurrency=2)
    with LocalServer("smollm2-135m", n_parallel=2, n_ctx=1024) as server:
        tokens = httpx.post(f"{server.url}/tokenize", json={"content": text}).json()["tokens"]
        assert len(tokens) > 1024  # the text alone overflows the context
        run(cfg, LLMClient.from_endpoints([server.endpoint()], concurrency=2, max_parse_retries=0))
    (pred,) = read_labelled(tmp_path / "out" / "predictions.jsonl")
    stats, debate = pred.stats, pred.debate
    assert stats.windows == len(debate.windows) > 2 and stats.failed_calls == 0
    assert all(c.error is None for c in debate.calls) and stats.calls == stats.windows
    assert pred.entities  # the tiny model finds some names in 32 sentences
    for e in pred.entities:
        assert text[e.start:e.end] == e.text
