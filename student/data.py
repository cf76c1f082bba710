"""Distilled chat examples: read, validate, and shape them for `SFTTrainer`.

An example is `{"messages": [{"role": "system"|"user"|"assistant", "content": str}, ...]}` whose last message is
the assistant's answer. For training it becomes a conversational prompt-completion pair (`prompt` = every
message before the answer, `completion` = the answer): TRL then masks the prompt out of the loss for any chat
template, with no `{% generation %}` markers needed, and the answer's end-of-turn token stays in the loss so
the student learns to stop.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datasets import DatasetDict

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


def to_prompt_completion(messages: Messages) -> dict[str, Messages]:
    return {"prompt": messages[:-1], "completion": messages[-1:]}


def load_chat_splits(data: str | Path, eval_data: str | Path | None = None) -> dict[str, list[Messages]]:
    """{"train": [...], "validation": [...]?} from a DatasetDict directory or JSONL file(s)."""
    data = Path(data)
    if data.is_dir():
        return _read_dataset_dict(data)
    splits = {"train": read_chat_jsonl(data)}
    if eval_data is not None:
        splits["validation"] = read_chat_jsonl(eval_data)
    return splits


def _read_dataset_dict(path: Path) -> dict[str, list[Messages]]:
    from datasets import DatasetDict, load_from_disk

    loaded = load_from_disk(str(path))
    if not isinstance(loaded, DatasetDict) or "train" not in loaded:
        raise DataError(f"{path}: expected a DatasetDict saved with save_to_disk with a 'train' split")
    splits = {}
    for split in ("train", "validation"):
        if split not in loaded:
            continue
        if "messages" not in loaded[split].column_names:
            raise DataError(f"{path}: split '{split}' has no 'messages' column")
        splits[split] = [check_messages(m, f"{path}[{split}][{i}]")
                         for i, m in enumerate(loaded[split]["messages"])]
    return splits


def build_sft_datasets(data: str | Path, eval_data: str | Path | None = None) -> DatasetDict:
    """The prompt-completion DatasetDict handed to `SFTTrainer` (`train`, and `validation` when present)."""
    from datasets import Dataset, DatasetDict

    splits = load_chat_splits(data, eval_data)
    if not splits["train"]:
        raise DataError(f"{data}: the train split is empty")
    return DatasetDict({name: Dataset.from_list([to_prompt_completion(m) for m in examples])
                        for name, examples in splits.items() if examples})
