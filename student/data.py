"""Distilled chat examples (`ie.chat_examples`) shaped for `SFTTrainer`.

For training an example becomes a conversational prompt-completion pair (`prompt` = every message before the
answer, `completion` = the answer): TRL then masks the prompt out of the loss for any chat template, with no
`{% generation %}` markers needed, and the answer's end-of-turn token stays in the loss so the student learns to
stop.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ie.chat_examples import DataError, Messages, check_messages, read_chat_jsonl

if TYPE_CHECKING:
    from datasets import DatasetDict


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
