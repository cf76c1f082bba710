"""Fine-tune a hosted OpenAI model on the distilled chat JSONL instead of (or beside) the local LoRA student.

    python -m student.openai_ft --train runs/distill/train.jsonl --validation runs/distill/validation.jsonl \
        --model gpt-4o-mini-2024-07-18 --dry-run

Offline first: every example is validated (roles, last message from the assistant, length), the file needs
`min_examples`, and the token count and training cost are estimated (`ie.fine_tune_plan`). Without `--dry-run`
the files are uploaded (`purpose="fine-tune"`), a supervised job is created, and its status is polled with
backoff until it ends; the fine-tuned model's name is printed. The API key is read from OPENAI_API_KEY only and
never logged; `--base-url` points the SDK at any OpenAI-compatible server.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ie.fine_tune_plan import FineTunePlan, plan_files
from student.config import OpenAIFineTuneConfig

TERMINAL_STATUSES = ("succeeded", "failed", "cancelled")


class FineTuneError(RuntimeError):
    """The job could not be started or did not succeed; the message says what the API reported."""


def plan_fine_tune(cfg: OpenAIFineTuneConfig) -> FineTunePlan:
    """Validate the files and estimate the job, without any network access."""
    return plan_files(cfg.train, cfg.validation, model=cfg.model, n_epochs=cfg.n_epochs,
                      price_per_mtok=cfg.price_per_mtok, min_examples=cfg.min_examples,
                      max_tokens_per_example=cfg.max_tokens_per_example)


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
