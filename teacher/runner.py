"""Labelling records: the library function (`label_records`) and the resumable run (`run`).

A run appends each record to `predictions.jsonl` as it finishes and caches every call (`calls.sqlite`), so
a re-run with the same settings skips finished records and repeats no LLM call; a kill loses at most the
records in flight. A record whose labelling raised is reported and not written, so a re-run retries it.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ie.config import ConfigError, DatasetConfig, TaskSchema, load_config, resolve_config_path
from ie.llm.client import Endpoint, LLMClient
from ie.mentions import MentionProfile
from ie.schema import Record, append_record, iter_records
from teacher.confidence import record_confidence
from teacher.config import TeacherConfig
from teacher.context import RecordContext
from teacher.methods import check_method, label

log = logging.getLogger("teacher")
PREDICTIONS, CONFIG, CACHE = "predictions.jsonl", "config.json", "calls.sqlite"
# Settings that do not change what a record's labels are: a resumed run may differ in these.
RESUMABLE_CHANGES = frozenset({"limit", "concurrency", "progress", "out", "cache", "re_mode"})


async def label_one(record: Record, method: str, schema: TaskSchema, client: LLMClient,
                    cfg: TeacherConfig, mentions: MentionProfile | None = None) -> Record:
    """One record labelled, with its `debate` transcript, `stats` and record-level `confidence`."""
    ctx = RecordContext(record.unlabelled(), schema, client, cfg, method, mentions)
    started, error = time.perf_counter(), None
    try:
        out, transcript = await label(ctx.record, method, ctx)
    except Exception as exc:  # one record's failure must not sink a long run; it is reported, not written
        log.exception("record %s: %s failed", record.id, method)
        out, transcript, error = ctx.record, ctx.transcript.as_dict(), f"{type(exc).__name__}: {exc}"
    stats = ctx.stats(time.perf_counter() - started)
    if error:
        stats["error"] = error
    confs = [e.confidence or 0.0 for e in out.entities] + [r.confidence or 0.0 for r in out.relations]
    confidence = record_confidence(confs, stats["failed_calls"], stats["unresolved_conflicts"])
    return Record(**out.model_dump(exclude_none=True), debate=transcript, stats=stats, confidence=confidence)


async def label_records(records: Sequence[Record], method: str, schema: TaskSchema, client: LLMClient,
                        cfg: TeacherConfig, on_record: Callable[[Record], None] | None = None,
                        mentions: MentionProfile | None = None) -> list[Record]:
    """Label `records` with `method`, at most `cfg.concurrency` at once; `on_record` sees each as it
    finishes. Returns them in input order. Records that failed carry `stats.error`. `mentions`: the dataset
    config's mention rules (default: `MentionProfile()`)."""
    check_method(method, schema)
    gate = asyncio.Semaphore(cfg.concurrency)

    async def one(record: Record) -> Record:
        async with gate:
            out = await label_one(record, method, schema, client, cfg, mentions)
        if on_record is not None:
            on_record(out)
        return out

    return list(await asyncio.gather(*(one(r) for r in records)))


def load_records(cfg: TeacherConfig, config_path: Path) -> tuple[list[Record], DatasetConfig]:
    from ie.datasets import load_input, load_split

    dataset = load_config(config_path)
    records = load_split(dataset, cfg.split) if cfg.split else load_input(cfg.input)  # type: ignore[arg-type]
    return records[: cfg.limit] if cfg.limit else records, dataset


def finished(path: Path, wanted: set[str]) -> list[Record]:
    """The labelled records of `wanted` in a predictions file (the first copy of a repeated id)."""
    found: dict[str, Record] = {}
    for record in iter_records(path) if path.exists() else ():
        if record.id in wanted:
            found.setdefault(record.id, record)
    return list(found.values())


def prepare_out(cfg: TeacherConfig, mentions: MentionProfile | None = None) -> Path:
    """Create the output folder; refuse to resume a run made with settings that change the labels (the
    dataset config's `mentions:` rules among them)."""
    out = cfg.out_dir
    out.mkdir(parents=True, exist_ok=True)
    saved_path = out / CONFIG
    current = {**cfg.to_json(), "mentions": (mentions or MentionProfile()).model_dump()}
    if saved_path.exists() and (out / PREDICTIONS).exists():
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
        for key in sorted(set(saved) | set(current)):
            if key not in RESUMABLE_CHANGES and saved.get(key) != current.get(key):
                raise ConfigError(f"{out}: holds a run with {key}={saved.get(key)!r}, not {current.get(key)!r}; "
                                  "use another --out (or delete the folder) to start afresh")
    saved_path.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    return out


def endpoint(cfg: TeacherConfig) -> contextlib.AbstractContextManager[Endpoint]:
    """The endpoint given, or the embedded llama.cpp server with one slot per concurrent record."""
    from ie.llm.local import ensure_endpoint

    if cfg.endpoint:
        return ensure_endpoint(cfg.model_name, cfg.endpoint, api_key_env=cfg.api_key_env,
                               structured_output=cfg.structured_output)
    return ensure_endpoint(cfg.model, None, n_parallel=cfg.concurrency)


async def _label_into(out: Path, todo: list[Record], dataset: DatasetConfig, client: LLMClient,
                      cfg: TeacherConfig) -> list[Record]:
    from tqdm import tqdm

    bar = tqdm(total=len(todo), unit="rec", disable=not cfg.progress, file=sys.stderr)
    tokens, started = 0, time.perf_counter()

    def on_record(record: Record) -> None:
        nonlocal tokens
        stats = record.model_extra["stats"]  # type: ignore[index]
        if "error" not in stats:
            append_record(out / PREDICTIONS, record)
        tokens += stats["prompt_tokens"] + stats["completion_tokens"]
        bar.update(1)
        bar.set_postfix(tok_s=f"{tokens / max(time.perf_counter() - started, 1e-9):.0f}")

    try:
        return await label_records(todo, cfg.method, dataset.task_schema, client, cfg, on_record=on_record,
                                   mentions=dataset.mentions)
    finally:
        bar.close()


async def _label_with_endpoint(out: Path, todo: list[Record], dataset: DatasetConfig, ep: Endpoint,
                               cfg: TeacherConfig) -> list[Record]:
    client = LLMClient.from_endpoints([ep], cache_path=out / CACHE if cfg.cache else None,
                                      concurrency=cfg.concurrency, max_parse_retries=cfg.parse_retries)
    try:
        return await _label_into(out, todo, dataset, client, cfg)
    finally:
        await client.aclose()


def _label_todo(out: Path, todo: list[Record], dataset: DatasetConfig, cfg: TeacherConfig,
                client: LLMClient | None) -> list[Record]:
    if client is not None:
        return asyncio.run(_label_into(out, todo, dataset, client, cfg))
    with endpoint(cfg) as ep:
        return asyncio.run(_label_with_endpoint(out, todo, dataset, ep, cfg))


def run(cfg: TeacherConfig, client: LLMClient | None = None) -> Path:
    """Label the configured records into `cfg.out_dir`; write metrics and a report when gold exists.
    `client`: an LLM client to use instead of `cfg`'s endpoint (tests, benches); its cache is its own."""
    from teacher.report import write_report

    cfg.check_source()
    records, dataset = load_records(cfg, resolve_config_path(cfg.config))
    check_method(cfg.method, dataset.task_schema)
    out = prepare_out(cfg, dataset.mentions)
    done = {r.id for r in finished(out / PREDICTIONS, {r.id for r in records})}
    todo = [r for r in records if r.id not in done]
    log.info("%s: %d records, %d already labelled", out, len(records), len(records) - len(todo))
    if todo:
        labelled = _label_todo(out, todo, dataset, cfg, client)
        failed = [r for r in labelled if "error" in r.model_extra["stats"]]  # type: ignore[index]
        if failed:
            log.error("%d records failed and were not written (re-run to retry); first: %s: %s", len(failed),
                      failed[0].id, failed[0].model_extra["stats"]["error"])  # type: ignore[index]
    predictions = finished(out / PREDICTIONS, {r.id for r in records})
    if any(r.entities or r.relations for r in records):
        write_report(out, records, predictions, dataset, cfg)
    return out
