"""Fine-tune a hosted OpenAI model on the distilled chat JSONL instead of (or beside) the local LoRA student.

    python -m student.openai_ft --train runs/distill/train.jsonl --validation runs/distill/validation.jsonl \
        --model gpt-4o-mini-2024-07-18 --dry-run

Offline first: every example is validated (roles, last message from the assistant, length), the file needs
`min_examples`, and the token count and training cost are estimated (`FineTunePlan`). Without `--dry-run` the
files are uploaded (`purpose="fine-tune"`), a supervised job is created, and its status is polled with backoff
until it ends; the fine-tuned model's name is printed. The API key is read from OPENAI_API_KEY only and never
logged; `--base-url` points the SDK at any OpenAI-compatible server.

Token counts use a documented heuristic, not a tokenizer (tokenizer files would have to be downloaded): ~4
characters per token (OpenAI's rule of thumb for English) plus 4 tokens of framing per message and 3 for the
reply, as in OpenAI's chat token-counting recipe. Treat the cost as an estimate within ~20%.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from student.config import OpenAIFineTuneConfig
from student.data import DataError, Messages, read_chat_jsonl

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REPLY = 3
# OpenAI's automatic epoch count (fine-tuning data-preparation recipe): 3 epochs, raised/lowered so that
# examples x epochs stays within [100, 25000], and kept within [1, 25].
TARGET_EPOCHS, MIN_TARGET_EXAMPLES, MAX_TARGET_EXAMPLES, MAX_DEFAULT_EPOCHS = 3, 100, 25_000, 25
TERMINAL_STATUSES = ("succeeded", "failed", "cancelled")


class FineTuneError(RuntimeError):
    """The job could not be started or did not succeed; the message says what the API reported."""


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


def check_file(path: str, cfg: OpenAIFineTuneConfig, min_examples: int) -> FileReport:
    examples = read_chat_jsonl(path)
    if len(examples) < min_examples:
        raise DataError(f"{path}: {len(examples)} examples; the API needs at least {min_examples} - add examples "
                        "(or merge splits)")
    counts = [estimate_tokens(m) for m in examples]
    longest = max(range(len(counts)), key=counts.__getitem__)
    if counts[longest] > cfg.max_tokens_per_example:
        raise DataError(f"{path}: example {longest + 1} has ~{counts[longest]} tokens, over the "
                        f"{cfg.max_tokens_per_example}-token limit; shorten or drop it")
    return FileReport(path, len(examples), sum(counts), counts[longest])


def plan_fine_tune(cfg: OpenAIFineTuneConfig) -> FineTunePlan:
    """Validate the files and estimate the job, without any network access."""
    train = check_file(cfg.train, cfg, cfg.min_examples)
    validation = check_file(cfg.validation, cfg, 1) if cfg.validation else None
    epochs = cfg.n_epochs or default_epochs(train.examples)
    billed = train.tokens * epochs
    price = cfg.price()
    cost = None if price is None else round(billed / 1e6 * price, 2)
    return FineTunePlan(cfg.model, train, validation, epochs, cfg.n_epochs is None, billed, price, cost)


def job_request(cfg: OpenAIFineTuneConfig, training_file: str, validation_file: str | None) -> dict[str, Any]:
    """Keyword arguments of `client.fine_tuning.jobs.create`; unset hyperparameters are left to the API."""
    hyper = {k: getattr(cfg, k) for k in ("n_epochs", "batch_size", "learning_rate_multiplier")
             if getattr(cfg, k) is not None}
    request: dict[str, Any] = {
        "model": cfg.model, "training_file": training_file, "suffix": cfg.suffix, "seed": cfg.seed,
        "method": {"type": "supervised", "supervised": {"hyperparameters": hyper}},
    }
    if validation_file:
        request["validation_file"] = validation_file
    return request


def run_job(cfg: OpenAIFineTuneConfig, client: Any, sleep: Callable[[float], None] = time.sleep,
            log: Callable[[str], None] = print) -> Any:
    """Upload, create the job, poll until it ends; the finished job, or `FineTuneError`."""
    def upload(path: str) -> str:
        with Path(path).open("rb") as fh:
            return client.files.create(file=fh, purpose="fine-tune").id

    training_file = upload(cfg.train)
    validation_file = upload(cfg.validation) if cfg.validation else None
    job = client.fine_tuning.jobs.create(**job_request(cfg, training_file, validation_file))
    log(f"job {job.id}: {job.status}")
    wait, deadline = cfg.poll_interval_s, time.monotonic() + cfg.timeout_s
    while job.status not in TERMINAL_STATUSES:
        if time.monotonic() > deadline:
            raise FineTuneError(f"job {job.id} still {job.status} after {cfg.timeout_s:.0f}s; it keeps running - "
                                "check it later with client.fine_tuning.jobs.retrieve")
        sleep(wait)
        wait = min(wait * 2, cfg.poll_max_s)
        previous, job = job.status, client.fine_tuning.jobs.retrieve(job.id)
        if job.status != previous:
            log(f"job {job.id}: {job.status}")
    if job.status != "succeeded":
        error = getattr(job.error, "message", None) or job.error
        raise FineTuneError(f"job {job.id} {job.status}: {error}")
    return job


def make_client(cfg: OpenAIFineTuneConfig) -> Any:
    from openai import OpenAI

    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        raise FineTuneError("OPENAI_API_KEY is not set; export it (the key is read from the environment only)")
    return OpenAI(api_key=key, base_url=cfg.base_url)


def main(argv: Sequence[str] | None = None) -> int:
    from trl import TrlParser

    parser = TrlParser(dataclass_types=[OpenAIFineTuneConfig], description=__doc__.splitlines()[0], allow_abbrev=False)
    (cfg,) = parser.parse_args_and_config(list(sys.argv[1:] if argv is None else argv))
    plan = plan_fine_tune(cfg)
    print(json.dumps(plan.as_dict(), indent=2))
    if cfg.dry_run:
        return 0
    job = run_job(cfg, make_client(cfg))
    print(json.dumps({"job": job.id, "status": job.status, "fine_tuned_model": job.fine_tuned_model}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
