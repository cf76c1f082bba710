"""Long texts against `../shared/tools/fake_openai.py`, which reports its context at `/props` and refuses
(HTTP 400) a request over `--max-chars`, as llama.cpp does: the server, a 3,000-word record and its gold
window by window."""
import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ie.config import load_config, resolve_config_path
from ie.llm.client import Endpoint, LLMClient
from ie.schema import Record

FAKE = Path(__file__).resolve().parents[2] / "shared" / "tools" / "fake_openai.py"
SCHEMA = load_config(resolve_config_path("conll04")).task_schema
N_CTX, MAX_CHARS = 2048, 6000  # 2048: smollm2's context in the catalogue
needs_fake = pytest.mark.skipif(not FAKE.exists(), reason=f"{FAKE} is not there")


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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fake:
    """fake_openai.py on a free port; `statuses()` are the HTTP statuses of the chat requests it got."""

    def __init__(self, tmp_path, *args):
        self.port, self.log = free_port(), tmp_path / f"requests-{len(list(tmp_path.glob('requests-*')))}.log"
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


def served_budget(url, fn, *args):
    async def go():
        client = LLMClient.from_endpoints([Endpoint(url, "fake")])
        try:
            return await fn(client, *args)
        finally:
            await client.aclose()
    return asyncio.run(go())
