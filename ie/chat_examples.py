"""Chat examples, the student's training file format: read and validate them.

An example is `{"messages": [{"role": "system"|"user"|"assistant", "content": str}, ...]}` whose last message is
the assistant's answer (TRL's and OpenAI's fine-tuning format alike). In `ie` because the distill stage checks
the files it writes with it and the student stage the files it trains on, and neither may import the other.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROLES = ("system", "user", "assistant")
Messages = list[dict[str, str]]


class DataError(ValueError):
    """A chat example is malformed; the message names the file, line/row and the fix."""


def check_messages(messages: Any, where: str) -> Messages:
    """The example's messages, reduced to role/content, or a `DataError` naming `where`."""
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{where}: 'messages' must be a non-empty list of {{role, content}} objects")
    clean: Messages = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ROLES:
            role = msg.get("role") if isinstance(msg, dict) else msg
            raise DataError(f"{where}: messages[{i}].role is {role!r}; use one of {', '.join(ROLES)}")
        if not isinstance(msg.get("content"), str):
            raise DataError(f"{where}: messages[{i}].content must be a string")
        clean.append({"role": msg["role"], "content": msg["content"]})
    if clean[-1]["role"] != "assistant":
        raise DataError(f"{where}: the last message must be the assistant's answer, got {clean[-1]['role']!r}")
    if not any(m["role"] == "user" for m in clean):
        raise DataError(f"{where}: no user message; every example needs the question the answer is for")
    return clean


def read_chat_jsonl(path: str | Path) -> list[Messages]:
    """Every example of a chat JSONL file, validated; blank lines are skipped."""
    path = Path(path)
    examples: list[Messages] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not JSON ({exc.msg}); each line must be one {{\"messages\": ...}} "
                                "object") from None
            if not isinstance(row, dict) or "messages" not in row:
                raise DataError(f"{where}: expected an object with a 'messages' key")
            examples.append(check_messages(row["messages"], where))
    return examples
