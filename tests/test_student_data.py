"""`student.data`: chat example files and dataset folders become prompt/completion datasets; a bad example
names its file and line."""
from __future__ import annotations

import json

import pytest

from student.data import DataError, build_sft_datasets
from tests.tiny_student import ANSWER, chat


def test_dataset_dict_directory_is_accepted(tmp_path):
    from datasets import Dataset, DatasetDict

    DatasetDict({"train": Dataset.from_list([chat()] * 3), "validation": Dataset.from_list([chat()])}) \
        .save_to_disk(str(tmp_path / "sft"))
    datasets = build_sft_datasets(tmp_path / "sft")
    assert (len(datasets["train"]), len(datasets["validation"])) == (3, 1)
    assert datasets["train"][0]["completion"] == [{"role": "assistant", "content": ANSWER}]


@pytest.mark.parametrize("line, message", [
    ('{"messages": [{"role": "user", "content": "q"}]}', "last message must be the assistant"),
    ('{"messages": [{"role": "bot", "content": "q"}]}', "role is 'bot'"),
    ("not json", "not JSON"),
])
def test_bad_examples_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(chat()) + "\n" + line + "\n")
    with pytest.raises(DataError, match=f"bad.jsonl:2: .*{message}"):
        build_sft_datasets(path)
