"""OpenAI fine-tuning job builder (`student.openai_ft`), offline: validation and cost estimate, then the real SDK
against a fake OpenAI-compatible server (stdlib http.server on 127.0.0.1) that records every request."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from ie.chat_examples import DataError
from ie.fine_tune_plan import default_epochs, estimate_tokens
from student import openai_ft
from student.config import OpenAIFineTuneConfig
from student.openai_ft import job_request, plan_fine_tune

SECRET = "sk-test-secret-never-printed"


def example(i: int) -> dict:
    return {"messages": [{"role": "system", "content": "Extract entities as JSON."},
                         {"role": "user", "content": f"Text {i}: Alice works for Acme."},
                         {"role": "assistant", "content": '{"entities": [{"text": "Alice", "type": "PER"}]}'}]}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path) -> tuple[Path, Path]:
    return (write_jsonl(tmp_path / "train.jsonl", [example(i) for i in range(12)]),
            write_jsonl(tmp_path / "validation.jsonl", [example(i) for i in range(3)]))


class FakeOpenAI(BaseHTTPRequestHandler):
    """files and fine_tuning/jobs endpoints; the job runs for two polls, then succeeds."""
    requests: ClassVar[list[dict]] = []
    polls: ClassVar[int] = 0

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> bytes:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.requests.append({"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"),
                              "body": body})
        return body

    def do_POST(self):
        body = self._record()
        if self.path == "/v1/files":
            n = sum(r["path"] == "/v1/files" for r in self.requests)
            self._reply({"id": f"file-{n}", "object": "file", "bytes": len(body), "created_at": 0,
                         "filename": "data.jsonl", "purpose": "fine-tune", "status": "processed"})
        elif self.path == "/v1/fine_tuning/jobs":
            self._reply(self._job("queued", json.loads(body)))

    def do_GET(self):
        self._record()
        FakeOpenAI.polls += 1
        status = "running" if FakeOpenAI.polls < 2 else "succeeded"
        self._reply(self._job(status, {"model": "gpt-4o-mini-2024-07-18", "training_file": "file-1"}))

    @staticmethod
    def _job(status: str, request: dict) -> dict:
        return {"id": "ftjob-1", "object": "fine_tuning.job", "status": status, "created_at": 0,
                "model": request["model"], "training_file": request["training_file"], "seed": 0,
                "fine_tuned_model": "ft:gpt-4o-mini:crossagentie:1" if status == "succeeded" else None,
                "organization_id": "org", "result_files": [], "hyperparameters": {}}


@pytest.fixture
def fake_server():
    FakeOpenAI.requests, FakeOpenAI.polls = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_dry_run_validates_and_estimates_cost_offline(files, capsys):
    train, validation = files
    assert openai_ft.main(["--train", str(train), "--validation", str(validation), "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["train"]["examples"] == 12 and plan["validation"]["examples"] == 3
    assert plan["train"]["tokens"] == sum(estimate_tokens(example(i)["messages"]) for i in range(12))
    assert plan["n_epochs"] == default_epochs(12) == 9 and plan["epochs_auto"]
    assert plan["billed_tokens"] == plan["train"]["tokens"] * 9
    assert plan["estimated_cost_usd"] == round(plan["billed_tokens"] / 1e6 * 3.00, 2)


def test_explicit_epochs_and_price_override(files):
    plan = plan_fine_tune(OpenAIFineTuneConfig(train=str(files[0]), n_epochs=2, price_per_mtok=10.0,
                                               model="some-new-model"))
    assert (plan.n_epochs, plan.epochs_auto, plan.price_per_mtok) == (2, False, 10.0)
    assert plan_fine_tune(OpenAIFineTuneConfig(train=str(files[0]), model="unpriced")).estimated_cost_usd is None


def test_job_request_shape(files):
    cfg = OpenAIFineTuneConfig(train=str(files[0]), n_epochs=3, learning_rate_multiplier=0.5, seed=7)
    assert job_request(cfg, "file-1", "file-2") == {
        "model": "gpt-4o-mini-2024-07-18", "training_file": "file-1", "validation_file": "file-2",
        "suffix": "crossagentie", "seed": 7,
        "method": {"type": "supervised", "supervised": {"hyperparameters": {"n_epochs": 3,
                                                                            "learning_rate_multiplier": 0.5}}}}


def test_job_runs_against_fake_server(files, fake_server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    train, validation = files
    code = openai_ft.main(["--train", str(train), "--validation", str(validation), "--base-url", fake_server,
                           "--n_epochs", "2", "--seed", "3", "--poll_interval_s", "0.01", "--poll_max_s", "0.02"])
    out = capsys.readouterr().out
    assert code == 0 and '"fine_tuned_model": "ft:gpt-4o-mini:crossagentie:1"' in out
    assert SECRET not in out
    uploads = [r for r in FakeOpenAI.requests if r["path"] == "/v1/files"]
    assert len(uploads) == 2 and all(b'name="purpose"\r\n\r\nfine-tune' in r["body"] for r in uploads)
    assert train.read_bytes() in uploads[0]["body"] and validation.read_bytes() in uploads[1]["body"]
    (create,) = [r for r in FakeOpenAI.requests if r["path"] == "/v1/fine_tuning/jobs"]
    body = json.loads(create["body"])
    assert (body["training_file"], body["validation_file"], body["seed"]) == ("file-1", "file-2", 3)
    assert body["method"] == {"type": "supervised", "supervised": {"hyperparameters": {"n_epochs": 2}}}
    polls = [r for r in FakeOpenAI.requests if r["method"] == "GET"]
    assert [r["path"] for r in polls] == ["/v1/fine_tuning/jobs/ftjob-1"] * 2
    assert all(r["auth"] == f"Bearer {SECRET}" for r in FakeOpenAI.requests)


def test_missing_api_key_fails_before_upload(files, fake_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(openai_ft.FineTuneError, match="OPENAI_API_KEY"):
        openai_ft.main(["--train", str(files[0]), "--base-url", fake_server])
    assert FakeOpenAI.requests == []


@pytest.mark.parametrize("rows, message", [
    ([example(i) for i in range(5)], "5 examples; the API needs at least 10"),
    ([example(0)] * 11 + [{"messages": example(0)["messages"][:2]}], "train.jsonl:12: the last message"),
    ([example(0)] * 11 + [{"messages": [{"role": "tool", "content": "x"}]}], "role is 'tool'"),
])
def test_invalid_training_files_are_rejected(tmp_path, rows, message):
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    with pytest.raises(DataError, match=message):
        plan_fine_tune(OpenAIFineTuneConfig(train=str(train)))


def test_overlong_example_is_rejected(files):
    with pytest.raises(DataError, match="example 1 has ~.* tokens, over the 20-token limit"):
        plan_fine_tune(OpenAIFineTuneConfig(train=str(files[0]), max_tokens_per_example=20))
