"""The student on long texts (`serve.windows`): the client labels a 3,000-word text window by window against
fake_openai.py without a refused request."""


from ie.schema import read_records, write_records
from ie.windows import split_windows
from serve.client import main as client_main
from serve.windows import student_budget
from tests.long_texts import SCHEMA, long_record, needs_fake, served_budget, window_gold

pytestmark = needs_fake


def test_the_student_client_labels_a_long_text_in_windows_without_a_refused_request(fake, tmp_path):
    gold = long_record()
    write_records(tmp_path / "in.jsonl", [gold.unlabelled()])
    plain = fake()
    windows = split_windows(gold, served_budget(plain.url, student_budget, SCHEMA, 384, None), 384 // 2)
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
