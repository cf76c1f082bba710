"""What an OpenAI fine-tuning job on chat example files would train on and cost, offline (no network access).

Every example is validated (`ie.chat_examples`), the training file needs `min_examples`, and no example may
exceed `max_tokens_per_example`. In `ie` because the distill stage prices its export with it and the student
stage (`student.openai_ft`) plans the job it starts with it, and neither may import the other.

Token counts use a documented heuristic, not a tokenizer (tokenizer files would have to be downloaded): ~4
characters per token (OpenAI's rule of thumb for English) plus 4 tokens of framing per message and 3 for the
reply, as in OpenAI's chat token-counting recipe. Treat the cost as an estimate within ~20%.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ie.chat_examples import DataError, Messages, read_chat_jsonl

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REPLY = 3
# OpenAI's automatic epoch count (fine-tuning data-preparation recipe): 3 epochs, raised/lowered so that
# examples x epochs stays within [100, 25000], and kept within [1, 25].
TARGET_EPOCHS, MIN_TARGET_EXAMPLES, MAX_TARGET_EXAMPLES, MAX_DEFAULT_EPOCHS = 3, 100, 25_000, 25
DEFAULT_MODEL = "gpt-4o-mini-2024-07-18"
MIN_EXAMPLES = 10  # fewest training examples the API accepts
MAX_TOKENS_PER_EXAMPLE = 65536  # longest example the API trains on
# USD per million *training* tokens (examples x epochs), OpenAI supervised fine-tuning price list; check
# https://openai.com/api/pricing before relying on an estimate and override with --price-per-mtok.
PRICE_PER_MTOK = {
    "gpt-4o-mini-2024-07-18": 3.00,
    "gpt-4o-2024-08-06": 25.00,
    "gpt-4.1-2025-04-14": 25.00,
    "gpt-4.1-mini-2025-04-14": 5.00,
    "gpt-4.1-nano-2025-04-14": 1.50,
    "gpt-3.5-turbo-0125": 8.00,
}


def estimate_tokens(messages: Messages) -> int:
    return TOKENS_PER_REPLY + sum(TOKENS_PER_MESSAGE + math.ceil(len(m["content"]) / CHARS_PER_TOKEN)
                                  for m in messages)


def default_epochs(n_examples: int) -> int:
    if n_examples * TARGET_EPOCHS < MIN_TARGET_EXAMPLES:
        return min(MAX_DEFAULT_EPOCHS, math.ceil(MIN_TARGET_EXAMPLES / n_examples))
    if n_examples * TARGET_EPOCHS > MAX_TARGET_EXAMPLES:
        return max(1, MAX_TARGET_EXAMPLES // n_examples)
    return TARGET_EPOCHS


@dataclass
class FileReport:
    path: str
    examples: int
    tokens: int  # per pass over the file
    max_example_tokens: int


@dataclass
class FineTunePlan:
    """What a job would train on and cost. `billed_tokens` = training tokens x epochs (validation is free)."""
    model: str
    train: FileReport
    validation: FileReport | None
    n_epochs: int
    epochs_auto: bool
    billed_tokens: int
    price_per_mtok: float | None
    estimated_cost_usd: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_file(path: str, min_examples: int, max_tokens_per_example: int) -> FileReport:
    examples = read_chat_jsonl(path)
    if len(examples) < min_examples:
        raise DataError(f"{path}: {len(examples)} examples; the API needs at least {min_examples} - add examples "
                        "(or merge splits)")
    counts = [estimate_tokens(m) for m in examples]
    longest = max(range(len(counts)), key=counts.__getitem__)
    if counts[longest] > max_tokens_per_example:
        raise DataError(f"{path}: example {longest + 1} has ~{counts[longest]} tokens, over the "
                        f"{max_tokens_per_example}-token limit; shorten or drop it")
    return FileReport(path, len(examples), sum(counts), counts[longest])


def plan_files(train: str, validation: str | None = None, *, model: str = DEFAULT_MODEL, n_epochs: int | None = None,
               price_per_mtok: float | None = None, min_examples: int = MIN_EXAMPLES,
               max_tokens_per_example: int = MAX_TOKENS_PER_EXAMPLE) -> FineTunePlan:
    """Validate the files and estimate the job, without any network access. `n_epochs` None: OpenAI's automatic
    choice; `price_per_mtok` None: the price table's, if it lists `model`."""
    train_report = check_file(train, min_examples, max_tokens_per_example)
    validation_report = check_file(validation, 1, max_tokens_per_example) if validation else None
    epochs = n_epochs or default_epochs(train_report.examples)
    billed = train_report.tokens * epochs
    price = price_per_mtok if price_per_mtok is not None else PRICE_PER_MTOK.get(model)
    cost = None if price is None else round(billed / 1e6 * price, 2)
    return FineTunePlan(model, train_report, validation_report, epochs, n_epochs is None, billed, price, cost)
