"""What a perfect model would keep on every shipped dataset config: an oracle endpoint
(`../shared/tools/fake_openai.py --oracle gold.jsonl`) answers `direct` and `one-step` with the gold mentions
copied exactly, so what is lost is lost to the toolkit's own post-processing (mention rules, caps, grounding).
The first 40 records of each config's dev split (SemEval: train), as `../shared/tools/oracle_reachability.sh`."""
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ie.config import CONFIGS_DIR, REPO_ROOT, load_config, score_options
from ie.datasets import load_split
from ie.schema import read_records, write_records
from ie.scoring import evaluate
from teacher.config import TeacherConfig
from teacher.runner import run

FAKE = REPO_ROOT.parent / "shared" / "tools" / "fake_openai.py"
CONFIGS = sorted(p for p in CONFIGS_DIR.glob("*.yaml") if "schema:" in p.read_text(encoding="utf-8"))
NEED = {"direct": ("ner", 0.90), "one-step": ("re", 0.85)}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(gold: Path) -> tuple[subprocess.Popen, str]:
    port = _port()
    server = subprocess.Popen([sys.executable, str(FAKE), str(port), "--lifetime", "120", "--oracle", str(gold)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return server, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError(f"{FAKE} did not start")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_an_oracle_keeps_the_gold_through_direct_and_one_step(path, tmp_path):
    if not FAKE.exists():
        pytest.skip(f"{FAKE} not found")
    config = load_config(path)
    split = "dev" if "dev" in config.splits else "train"
    if not config.split_path(split).exists():
        pytest.skip(f"{config.name} {split}: {config.split_path(split)} not found")
    gold = load_split(config, split)[:40]
    write_records(tmp_path / "gold.jsonl", gold)
    methods = ["direct", "one-step"] if config.task_schema.relation_types else ["direct"]
    server, url = _serve(tmp_path / "gold.jsonl")
    try:
        kept = {}
        for method in methods:
            out = run(TeacherConfig(config=str(path), input=str(tmp_path / "gold.jsonl"), method=method,
                                    endpoint=url, model_name="oracle", out=str(tmp_path / method), cache=False,
                                    progress=False))
            scores = evaluate(gold, read_records(out / "predictions.jsonl"), config.task_schema,
                              **score_options(config).model_dump())
            task, need = NEED[method]
            kept[method] = getattr(scores, task).micro.recall
            assert kept[method] >= need, f"{config.name}: {method} keeps {kept[method]:.1%} of gold {task}"
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_the_span_grammar_lets_a_model_write_every_gold_mention_within_max_words(path):
    # What `mentions.spans_in_grammar` allows, built as a record's labelling builds it (token edges when the
    # record has tokens): a gold span it forbids could never be extracted on an llguidance server.
    import re

    from ie.llm.client import LLMClient
    from ie.llm.fake import ScriptedTransport
    from teacher.context import RecordContext

    config = load_config(path)
    split = "dev" if "dev" in config.splits else "train"
    if not config.split_path(split).exists():
        pytest.skip(f"{config.name} {split}: {config.split_path(split)} not found")
    profile = config.mentions.model_copy(update={"spans_in_grammar": True})
    client = LLMClient([ScriptedTransport(lambda r: "{}")])
    checked = 0
    for record in load_split(config, split)[:40]:
        spans = re.compile(RecordContext(record, config.task_schema, client, TeacherConfig(), "direct", profile).spans)
        for e in record.entities:
            if profile.max_words is None or len(e.text.split()) <= profile.max_words:
                assert spans.fullmatch(e.text), f"{config.name} {record.id}: gold {e.text!r}"
                checked += 1
    assert checked
