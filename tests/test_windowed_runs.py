"""Long texts end to end against `../shared/tools/fake_openai.py`, which reports its context at `/props` and
refuses (HTTP 400) a request over `--max-chars`, as llama.cpp does: the teacher and the student label a
3,000-word text window by window, no request is refused, and the merged labels are the gold ones."""
import asyncio
import dataclasses
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ie.config import load_config, resolve_config_path
from ie.llm.client import Endpoint, LLMClient
from ie.llm.server_info import endpoint_context
from ie.schema import Record, read_records, write_records
from ie.windows import split_windows
from serve.client import main as client_main
from serve.windows import student_budget
from teacher.config import TeacherConfig
from teacher.runner import run
from teacher.windowed import method_budget

FAKE = Path(__file__).resolve().parents[2] / "shared" / "tools" / "fake_openai.py"
SCHEMA = load_config(resolve_config_path("conll04")).task_schema
N_CTX, MAX_CHARS = 2048, 6000  # 2048: smollm2's context in the catalogue
pytestmark = pytest.mark.skipif(not FAKE.exists(), reason=f"{FAKE} is not there")


def _code(i):
    return chr(97 + i // 26) + chr(97 + i % 26)


def long_record():
    """375 sentences (3,000 words), each naming a person and a place found nowhere else, with Live_In."""
    text, entities, relations = "", [], []
    for i in range(375):
        person, place = f"Zed{_code(i)}", f"Qor{_code(i)}"
        sentence = f"{person} lives in {place} and likes tea a lot ."
        start = len(text) + (1 if text else 0)
        text += (" " if text else "") + sentence
        entities += [{"start": start, "end": start + len(person), "type": "Peop", "text": person},
                     {"start": start + sentence.index(place), "end": start + sentence.index(place) + len(place),
                      "type": "Loc", "text": place}]
        relations.append({"head": len(entities) - 2, "tail": len(entities) - 1, "type": "Live_In"})
    return Record(id="long", text=text, entities=entities, relations=relations)


def window_gold(record, windows):
    """One oracle record per window: the gold entities and relations that lie inside it, in its offsets."""
    out = []
    for w in windows:
        inside = [i for i, e in enumerate(record.entities) if w.start <= e.start and e.end <= w.end]
        index = {i: k for k, i in enumerate(inside)}
        ents = [record.entities[i].model_copy(update={"start": record.entities[i].start - w.start,
                                                      "end": record.entities[i].end - w.start}) for i in inside]
        rels = [r.model_copy(update={"head": index[r.head], "tail": index[r.tail]})
                for r in record.relations if r.head in index and r.tail in index]
        out.append(Record(id=w.record.id, text=w.record.text, entities=ents, relations=rels))
    return out


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fake:
    """fake_openai.py on a free port; `statuses()` are the HTTP statuses of the chat requests it got."""

    def __init__(self, tmp_path, *args):
        self.port, self.log = _free_port(), tmp_path / f"requests-{len(list(tmp_path.glob('requests-*')))}.log"
        self.proc = subprocess.Popen([sys.executable, str(FAKE), str(self.port), "--lifetime", "120", "--log",
                                      str(self.log), "--n-ctx", str(N_CTX), "--max-chars", str(MAX_CHARS), *args])
        self.url = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.05)
        self.close()
        raise RuntimeError("fake_openai.py did not start")

    def statuses(self):
        return [line.split()[1] for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def fake(tmp_path):
    servers = []

    def start(*args):
        servers.append(Fake(tmp_path, *args))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def test_the_context_comes_from_props_and_an_unreachable_server_reports_none(fake):
    server = fake()
    assert asyncio.run(endpoint_context(Endpoint(server.url, "fake"))) == N_CTX
    closed = f"http://127.0.0.1:{_free_port()}/v1"
    assert asyncio.run(endpoint_context(Endpoint(closed, "fake"))) is None


def _budget(url, fn, *args):
    async def go():
        client = LLMClient.from_endpoints([Endpoint(url, "fake")])
        try:
            return await fn(client, *args)
        finally:
            await client.aclose()
    return asyncio.run(go())


def test_the_teacher_labels_a_long_text_in_windows_without_a_refused_request(fake, tmp_path):
    gold = long_record()
    write_records(tmp_path / "in.jsonl", [gold.unlabelled()])
    plain = fake()
    cfg = TeacherConfig(input=str(tmp_path / "in.jsonl"), method="one-step", out=str(tmp_path / "out"),
                        progress=False, endpoint=plain.url, model_name="fake", window_tokens=64)
    windows = split_windows(gold, _budget(plain.url, method_budget, cfg, SCHEMA), cfg.window_tokens)
    assert len(windows) > 5 and len(gold.text) > MAX_CHARS
    write_records(tmp_path / "oracle.jsonl", window_gold(gold, windows))
    server = fake("--oracle", str(tmp_path / "oracle.jsonl"))
    run(dataclasses.replace(cfg, endpoint=server.url))
    assert server.statuses() == ["200"] * len(windows)  # one call a window, none refused
    (pred,) = read_records(tmp_path / "out" / "predictions.jsonl")  # offsets validated against the text
    assert [e.key for e in pred.entities] == [e.key for e in gold.entities]
    assert [(r.head, r.tail, r.type) for r in pred.relations] == [(r.head, r.tail, r.type) for r in gold.relations]
    debate, stats = pred.model_extra["debate"], pred.model_extra["stats"]
    assert [(w["start"], w["end"]) for w in debate["windows"]] == [(w.start, w.end) for w in windows]
    assert sorted({c["window"] for c in debate["calls"]}) == list(range(len(windows)))
    assert stats["windows"] == len(windows) and stats["calls"] == len(windows) and stats["failed_calls"] == 0


def test_the_student_client_labels_a_long_text_in_windows_without_a_refused_request(fake, tmp_path):
    gold = long_record()
    write_records(tmp_path / "in.jsonl", [gold.unlabelled()])
    plain = fake()
    windows = split_windows(gold, _budget(plain.url, student_budget, SCHEMA, 384, None), 384 // 2)
    write_records(tmp_path / "oracle.jsonl", window_gold(gold, windows))
    server = fake("--oracle", str(tmp_path / "oracle.jsonl"))
    out = tmp_path / "out.jsonl"
    assert client_main(["--endpoint", server.url, "--model", "fake", "--input", str(tmp_path / "in.jsonl"),
                        "--config", "conll04", "--out", str(out), "--max-reasks", "0"]) == 0
    assert server.statuses() == ["200"] * len(windows)
    (pred,) = read_records(out)
    assert [e.key for e in pred.entities] == [e.key for e in gold.entities]
    assert len(pred.relations) == len(gold.relations)
    assert pred.model_extra["stats"]["windows"] == len(windows) == len(pred.model_extra["windows"])


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
    (pred,) = read_records(tmp_path / "out" / "predictions.jsonl")
    stats, debate = pred.model_extra["stats"], pred.model_extra["debate"]
    assert stats["windows"] == len(debate["windows"]) > 2 and stats["failed_calls"] == 0
    assert all("error" not in c for c in debate["calls"]) and stats["calls"] == stats["windows"]
    assert pred.entities  # the tiny model finds some names in 32 sentences
    for e in pred.entities:
        assert text[e.start:e.end] == e.text
