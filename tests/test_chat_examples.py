"""`ie.chat_examples`: chat examples are read down to role and content; a malformed one names where and the fix."""
import json

import pytest

from ie.chat_examples import DataError, check_messages, read_chat_jsonl

QUESTION = {"role": "user", "content": "Extract: Bo runs ."}
ANSWER = {"role": "assistant", "content": '{"entities": []}'}


def test_examples_keep_role_and_content_and_a_malformed_one_names_its_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps({"messages": [{**QUESTION, "name": "x"}, ANSWER]}) + "\n\n" + '{"rows": []}\n')
    with pytest.raises(DataError, match=r"train.jsonl:3: expected an object with a 'messages' key"):
        read_chat_jsonl(path)
    path.write_text(json.dumps({"messages": [{**QUESTION, "name": "x"}, ANSWER]}) + "\n")
    assert read_chat_jsonl(path) == [[QUESTION, ANSWER]]
    for messages, problem in (([], "non-empty list"), ([ANSWER], "no user message"),
                              ([QUESTION, {"role": "assistant", "content": 3}], r"messages\[1\].content")):
        with pytest.raises(DataError, match=rf"^f:1: .*{problem}"):
            check_messages(messages, "f:1")
