"""The student on long texts (`serve.windows`): the client labels a 3,000-word text window by window, without
a refused request from fake_openai.py (which refuses long requests as llama.cpp does), and a perfect student's
answers, window by window, merge into the text's gold."""
from fault_server import FaultServer, Reply

from ie.records import read_labelled
from ie.schema import write_records
from ie.student_format import render_answer
from ie.windows import split_windows
from serve.client import main as client_main
from serve.windows import student_budget
from tests.long_texts import N_CTX, SCHEMA, long_record, needs_fake, served_budget, window_gold

pytestmark = needs_fake


def test_the_student_client_labels_a_long_text_in_windows_without_a_refused_request(fake, tmp_path):
    gold = long_record()
    write_records(tmp_path / "in.jsonl", [gold.unlabelled()])
    server = fake()
    windows = split_windows(gold, served_budget(server.url, student_budget, SCHEMA, 384, None), 384 // 2)
    out = tmp_path / "out.jsonl"
    assert client_main(["--endpoint", server.url, "--model", "fake", "--input", str(tmp_path / "in.jsonl"),
                        "--config", "conll04", "--out", str(out), "--max-reasks", "0"]) == 0
    assert server.statuses() == ["200"] * len(windows)
    (pred,) = read_labelled(out)
    assert pred.stats.windows == len(windows) == len(pred.windows)

    # A perfect student: each window's gold, written as the student is trained to write it.
    answers = {w.text: render_answer(w, SCHEMA) for w in window_gold(gold, windows)}

    def perfect(body: dict) -> Reply:
        text = body["messages"][-1]["content"].split("<text>\n", 1)[1].rsplit("\n</text>", 1)[0]
        return Reply(answers[text])

    with FaultServer(perfect) as student:
        assert client_main(["--endpoint", student.url, "--model", "fake", "--input", str(tmp_path / "in.jsonl"),
                            "--config", "conll04", "--out", str(out), "--max-reasks", "0",
                            "--context-tokens", str(N_CTX)]) == 0
    assert len(student.requests) == len(windows)
    (pred,) = read_labelled(out)
    assert [e.key for e in pred.entities] == [e.key for e in gold.entities]
    assert len(pred.relations) == len(gold.relations)
