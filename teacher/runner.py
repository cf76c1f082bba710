"""Labelling records: the library function (`label_records`) and the resumable run (`run`).

A run appends each record to `predictions.jsonl` as it finishes and caches every call (`calls.sqlite`), so
a re-run with the same settings skips finished records (same id and same text) and repeats no LLM call; a
kill loses at most the records in flight. One run writes a folder at a time (`ie.runlock`). A re-run resumes
only when everything that decides a label is the same: the settings, the schema and mention rules, the prompt
templates' text, and the model name the endpoint answers as. A record that failed (a call got no answer or
none that validated, its time budget ran out, or its labelling raised) is not written but listed in
`failures.jsonl` (`ie.failures`); a re-run retries it. A run that stops (`RunStopped`: a full disk, an endpoint
that answers nothing) lists every record it did not write there.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ie.config import ConfigError, DatasetConfig, TaskSchema, load_config, resolve_config_path
from ie.failures import Failure, IncompleteRun, append_or_stop, failure_of, within_budget, write_failures
from ie.llm.client import LLMClient
from ie.llm.types import RunStopped
from ie.mentions import MentionProfile
from ie.records import LabelledRecord, iter_labelled, parse_labelled
from ie.runlock import RunLock
from ie.schema import Record, RecordFormatError
from teacher.confidence import record_confidence
from teacher.config import TeacherConfig
from teacher.context import RecordContext
from teacher.labeller import open_labeller
from teacher.methods import check_method, label
from teacher.routing import check_router
from teacher.templates import PROMPT_DIR
from teacher.windowed import label_long, method_budget

log = logging.getLogger("teacher")
PREDICTIONS, CONFIG, CACHE, FAILURES = "predictions.jsonl", "config.json", "calls.sqlite", "failures.jsonl"
# Settings that do not change what a record's labels are: a resumed run may differ in these.
RESUMABLE_CHANGES = frozenset({"limit", "offset", "concurrency", "progress", "out", "cache", "re_mode", "retries",
                               "timeout_connect_s", "timeout_first_token_s", "timeout_tokens_per_s",
                               "timeout_first_answer_s", "timeout_record_s", "config"})
SERVED = "served_model"  # config.json's record of the model name the endpoint answered as


async def label_one(record: Record, method: str, schema: TaskSchema, client: LLMClient,
                    cfg: TeacherConfig, mentions: MentionProfile | None = None) -> LabelledRecord:
    """One record labelled, with its `debate` transcript, `stats` and record-level `confidence`. A record that
    did not finish (see `ie.failures`) has `stats.failed` (the reason) and `stats.error`."""
    ctx = RecordContext(record.unlabelled(), schema, client, cfg, method, mentions)
    started = time.perf_counter()
    try:
        labelled, failure = await within_budget(label(ctx.record, method, ctx), cfg.timeout_record_s)
    except RunStopped:
        raise
    except Exception as exc:  # one record's failure must not sink a long run; it is reported, not written
        log.exception("record %s: %s failed", record.id, method)
        labelled, failure = None, (type(exc).__name__, f"{type(exc).__name__}: {exc}")
    out, transcript = labelled or (ctx.record, ctx.transcript)
    stats = ctx.stats(time.perf_counter() - started)
    if failure:
        log.debug("record %s failed: %s", record.id, failure[1])
        stats.failed, stats.error = failure
    confs = [e.confidence or 0.0 for e in out.entities] + [r.confidence or 0.0 for r in out.relations]
    confidence = record_confidence(confs, stats.failed_calls, stats.unresolved_conflicts)
    return LabelledRecord(**dict(out), debate=transcript, stats=stats, confidence=confidence)


async def label_records(records: Sequence[Record], method: str, schema: TaskSchema, client: LLMClient,
                        cfg: TeacherConfig, on_record: Callable[[LabelledRecord], None] | None = None,
                        mentions: MentionProfile | None = None) -> list[LabelledRecord]:
    """Label `records` with `method`, at most `cfg.concurrency` at once; `on_record` sees each as it
    finishes. Returns them in input order. Records that failed carry `stats.failed` and `stats.error`. A text
    too long for the endpoint's context is labelled in windows (`teacher.windowed`). `mentions`: the dataset
    config's mention rules (default: `MentionProfile()`)."""
    check_method(method, schema)
    check_router(method, schema, cfg)
    gate = asyncio.Semaphore(cfg.concurrency)
    budget = await method_budget(client, cfg, schema)

    async def one(record: Record) -> LabelledRecord:
        async with gate:
            out = await label_long(record, budget, cfg.window_tokens, method,
                                   lambda r: label_one(r, method, schema, client, cfg, mentions))
        if on_record is not None:
            on_record(out)
        return out

    return list(await asyncio.gather(*(one(r) for r in records)))


def load_records(cfg: TeacherConfig, config_path: Path) -> tuple[list[Record], DatasetConfig]:
    from ie.datasets import load_input, load_slice, select

    dataset = load_config(config_path)
    if cfg.split:
        records = load_slice(dataset, cfg.split, cfg.offset, cfg.limit)
    else:
        records = select(load_input(cfg.input), cfg.offset, cfg.limit)  # type: ignore[arg-type]
    if not records:
        raise ConfigError(f"{cfg.input or f'split {cfg.split}'}: no records to label (the input is empty)")
    return records, dataset


def finished(path: Path, records: Sequence[Record]) -> list[LabelledRecord]:
    """The labelled records of `records` in a predictions file: same id and same text (first copy of a repeat)."""
    wanted = {(r.id, r.text) for r in records}
    found: dict[tuple[str, str], LabelledRecord] = {}
    for record in iter_labelled(path) if path.exists() else ():
        if (record.id, record.text) in wanted:
            found.setdefault((record.id, record.text), record)
    return list(found.values())


def repair_predictions(path: Path, records: Sequence[Record]) -> None:
    """Make a predictions file safe to append to: a half-written last line (a run killed mid-write) is dropped,
    so its record is labelled again, and so are the lines of an id whose input text has changed (a line
    inserted in a .txt input shifts the ids after it). A malformed line elsewhere is an error naming it."""
    if not path.exists():
        return
    texts = {r.id: r.text for r in records}
    lines = path.read_bytes().split(b"\n")
    keep, torn, superseded = [], False, 0
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            if lineno < len(lines):  # a whole line, not the unterminated last one: damage, not a kill
                raise RecordFormatError(path, lineno, "<json>", "invalid JSON; fix or delete the line") from None
            log.warning("%s:%d: dropped a half-written last line (a stopped run); its record is labelled again",
                        path, lineno)
            torn = True
            continue
        record = parse_labelled(obj, path, lineno)
        if texts.get(record.id, record.text) != record.text:
            superseded += 1
            continue
        keep.append(raw + b"\n")
    if superseded:
        log.warning("%s: %d labelled ids have another text in the input now; they are labelled again",
                    path, superseded)
    if torn or superseded or lines[-1]:  # lines[-1]: the last line has no newline yet
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(b"".join(keep))
        os.replace(tmp, path)


def prompts_digest() -> str:
    """The prompt templates' text, hashed: an edited template changes the labels a resumed run would keep."""
    digest = hashlib.sha256()
    for path in sorted(PROMPT_DIR.glob("*.txt")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def label_key(cfg: TeacherConfig, dataset: DatasetConfig) -> dict[str, object]:
    """Everything that decides a record's labels, by content: the settings, the schema and the `mentions:` rules
    of the dataset config (not its path), and the prompt templates."""
    return {**cfg.to_json(), "mentions": dataset.mentions.model_dump(mode="json"),
            "schema": dataset.task_schema.model_dump(mode="json"), "prompts": prompts_digest()}


def _difference(saved: object, current: object, where: str) -> str | None:
    """The first place two JSON values differ, in words ('schema.entity_types.Other: removed'), or None."""
    if isinstance(saved, dict) and isinstance(current, dict):
        for key in sorted(set(saved) | set(current), key=str):
            if key not in current:
                return f"{where}.{key}: removed"
            if key not in saved:
                return f"{where}.{key}: added"
            if (found := _difference(saved[key], current[key], f"{where}.{key}")) is not None:
                return found
        return None
    if saved == current:
        return None
    return f"{where}: was {str(saved)[:80]!r}, now {str(current)[:80]!r}"


def prepare_out(cfg: TeacherConfig, dataset: DatasetConfig) -> str | None:
    """Create the output folder; refuse to resume a run whose labels were made otherwise (`label_key`), saying
    what changed and the choices. Returns the model name the endpoint answered as in the runs before, if any."""
    out = cfg.out_dir
    out.mkdir(parents=True, exist_ok=True)
    saved_path = out / CONFIG
    current = label_key(cfg, dataset)
    saved = json.loads(saved_path.read_text(encoding="utf-8")) if saved_path.exists() else {}
    if saved and (out / PREDICTIONS).exists():
        for key in sorted(set(saved) | set(current)):
            if key in RESUMABLE_CHANGES or key == SERVED:
                continue
            if key not in saved:  # a run made before `key` was recorded: said, not refused (nor kept silently)
                log.warning("%s: the run that labelled it did not record %s; resumed as if it were the same (delete "
                            "%s to label every record again)", out, key, out / PREDICTIONS)
                continue
            if (change := _difference(saved.get(key), current.get(key), key)) is not None:
                raise ConfigError(f"{out}: its labels were made with other settings ({change}); keeping them would "
                                  f"mix stale labels in: use another --out, or delete {out / PREDICTIONS} to label "
                                  "every record again here")
        current[SERVED] = saved.get(SERVED)
    _write_config(out, current)
    return current.get(SERVED)  # type: ignore[return-value]


def _write_config(out: Path, settings: dict[str, object]) -> None:
    (out / CONFIG).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def record_served_model(out: Path, name: str | None) -> None:
    """Keep the model name the endpoint answered as in config.json (a resumed run must get the same)."""
    saved = json.loads((out / CONFIG).read_text(encoding="utf-8"))
    if name and saved.get(SERVED) != name:
        _write_config(out, {**saved, SERVED: name})


async def _label_into(out: Path, todo: list[Record], dataset: DatasetConfig, client: LLMClient,
                      cfg: TeacherConfig, seen: list[LabelledRecord]) -> None:
    """Label `todo`, appending each finished record; `seen` gets every record written or failed, as it ends."""
    from tqdm import tqdm

    bar = tqdm(total=len(todo), unit="rec", disable=not cfg.progress, file=sys.stderr)
    tokens, started = 0, time.perf_counter()

    def on_record(record: LabelledRecord) -> None:
        nonlocal tokens
        stats = record.stats
        if stats.failed is None:
            append_or_stop(out / PREDICTIONS, record)
        seen.append(record)
        tokens += stats.prompt_tokens + stats.completion_tokens
        bar.update(1)
        bar.set_postfix(tok_s=f"{tokens / max(time.perf_counter() - started, 1e-9):.0f}")

    try:
        await label_records(todo, cfg.method, dataset.task_schema, client, cfg, on_record=on_record,
                            mentions=dataset.mentions)
    finally:
        bar.close()
        record_served_model(out, client.served_model)


async def _label_opened(out: Path, todo: list[Record], dataset: DatasetConfig, cfg: TeacherConfig,
                        served_as: str | None, seen: list[LabelledRecord]) -> None:
    """`todo` labelled by `cfg`'s labeller (`teacher.labeller`), its calls cached in the run folder; `served_as`:
    the model name this folder's labels came from."""
    async with open_labeller(cfg, out / CACHE if cfg.cache else None, served_as=served_as) as labeller:
        await _label_into(out, todo, dataset, labeller.client, cfg, seen)


def _label_todo(out: Path, todo: list[Record], dataset: DatasetConfig, cfg: TeacherConfig,
                client: LLMClient | None, served_as: str | None) -> list[Failure]:
    """Label `todo`; the failures, with every record a stopped run did not write (then `IncompleteRun.stop`)."""
    seen: list[LabelledRecord] = []
    order = {r.id: i for i, r in enumerate(todo)}
    try:
        if client is not None:
            asyncio.run(_label_into(out, todo, dataset, client, cfg, seen))
        else:
            asyncio.run(_label_opened(out, todo, dataset, cfg, served_as, seen))
    except RunStopped as stop:
        seen.sort(key=lambda r: order[r.id])
        ended = {r.id for r in seen}
        failures = [Failure.of(r) for r in seen if failure_of(r) is not None]
        raise IncompleteRun(failures + [Failure.stopped(r, stop) for r in todo if r.id not in ended], len(todo),
                            out / FAILURES, stop) from None
    seen.sort(key=lambda r: order[r.id])  # input order, not finishing order
    return [Failure.of(r) for r in seen if failure_of(r) is not None]


def run(cfg: TeacherConfig, client: LLMClient | None = None) -> Path:
    """Label the configured records into `cfg.out_dir`, the one run writing there (`RunLock`); write the viewer
    (report.html, `ie.viewer`) of what finished, and metrics and a report when gold exists. `client`: an LLM
    client to use instead of `cfg`'s endpoint (tests, benches); its cache is its own. Raises `IncompleteRun`
    (after writing what finished and `failures.jsonl`) when records failed or the run stopped: a re-run retries
    them."""
    cfg.check_source()
    records, dataset = load_records(cfg, resolve_config_path(cfg.config))
    check_method(cfg.method, dataset.task_schema)
    with RunLock(cfg.out_dir):
        return _run_locked(cfg, records, dataset, client)


def _run_locked(cfg: TeacherConfig, records: list[Record], dataset: DatasetConfig, client: LLMClient | None) -> Path:
    from teacher.report import write_report, write_viewer

    out = cfg.out_dir
    served_as = prepare_out(cfg, dataset)
    repair_predictions(out / PREDICTIONS, records)
    done = {(r.id, r.text) for r in finished(out / PREDICTIONS, records)}
    todo = [r for r in records if (r.id, r.text) not in done]
    log.info("%s: %d records, %d already labelled", out, len(records), len(records) - len(todo))
    try:
        failures = _label_todo(out, todo, dataset, cfg, client, served_as) if todo else []
    except IncompleteRun as stopped:
        _end_incomplete(out, stopped.failures)
        raise IncompleteRun(stopped.failures, len(records), out / FAILURES, stopped.stop) from None
    _end_incomplete(out, failures)
    predictions = finished(out / PREDICTIONS, records)
    write_viewer(out, records, predictions, dataset, cfg)
    if failures:
        raise IncompleteRun(failures, len(records), out / FAILURES)
    if any(r.entities or r.relations for r in records):
        served = json.loads((out / CONFIG).read_text(encoding="utf-8")).get(SERVED)
        write_report(out, records, predictions, dataset, cfg, served)
    return out


def _end_incomplete(out: Path, failures: list[Failure]) -> None:
    """Write `failures.jsonl` (none: removed); with failures, an earlier run's scores go: not these records'."""
    write_failures(out / FAILURES, failures)
    if failures:
        for name in ("metrics.json", "report.md"):
            (out / name).unlink(missing_ok=True)
