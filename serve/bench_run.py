"""Running the bench: teacher methods through `teacher.runner.label_records`, the student through
`serve.client.StudentExtractor`, each timed on the same records; rows reused unless settings changed. A method
with unfinished records (`ie.failures`) gets no row: they are listed in `rows/<method>.failures.jsonl` and the
bench stops with `IncompleteRun`; a re-run labels only what is missing."""
from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from ie.config import DatasetConfig, score_options
from ie.failures import Failure, IncompleteRun, failure_of, write_failures
from ie.llm.client import Endpoint, LLMClient
from ie.records import CallLog, LabelledRecord, read_labelled
from ie.schema import Record, write_records
from serve.bench_config import BenchConfig, write_json
from serve.bench_metrics import (
    MethodMetrics,
    Price,
    add_ratios,
    calculate_metrics,
    student_target,
    teacher_target,
)
from serve.bench_report import write_markdown, write_plot

if TYPE_CHECKING:
    from teacher.config import TeacherConfig


class Overhead(BaseModel):
    """What the toolkit costs over the server alone (`measure_overhead`): the teacher's wall time, the replay's
    of the same calls, how many were replayed, and the share of the wall time that is the toolkit's."""
    teacher_wall_s: float
    replay_wall_s: float
    replayed_calls: int
    overhead_fraction: float


class MeasuredRow(BaseModel):
    """`rows/<method>.json`: a method's measurement, reused by a later bench with the same `settings`; its
    scores are recomputed from `predictions/<method>.jsonl`."""
    settings: dict[str, Any]
    wall_s: float
    model: str
    measured_at: str
    fresh: bool
    overhead: Overhead | None = Field(default=None, exclude_if=lambda v: v is None)


def _row_path(out: Path, method: str) -> Path:
    return out / "rows" / f"{method}.json"


class PartialRow:
    """A method's records appended as they finish (`rows/<method>.partial.jsonl`, first line its settings and
    whether they were measured fresh), so a stopped bench resumes where it stopped: finished records keep the
    stats (and wall time) they were measured with; a resumed method's wall time adds theirs (exact at
    concurrency 1). Settings that differ (but for `limit` and `offset`: a record is the same record in another
    slice), or a fresh bench over records measured with the call cache on, start it afresh."""

    def __init__(self, out: Path, method: str, settings: dict[str, Any], fresh: bool):
        settings = {k: v for k, v in settings.items() if k not in ("limit", "offset")}
        self.path = out / "rows" / f"{method}.partial.jsonl"
        self.done: dict[str, LabelledRecord] = {}
        if self.path.exists():
            lines = self.path.read_text(encoding="utf-8").splitlines()
            header = json.loads(lines[0]) if lines else {}
            measured_fresh = header.pop("fresh", False)
            if header == settings and (measured_fresh or not fresh):
                records = self._finished(lines)
                self.done = {r.id: r for r in records}
                # rewritten without a last record cut off by a kill (it runs again), and as measured with the
                # cache on once a bench with the cache on adds to it
                first = json.dumps({**settings, "fresh": fresh})
                if len(records) < len(lines) - 1 or measured_fresh != fresh:
                    self.path.write_text("".join(x + "\n" for x in [first] + lines[1:len(records) + 1]),
                                         encoding="utf-8")
        if not self.done:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({**settings, "fresh": fresh}) + "\n", encoding="utf-8")

    def _finished(self, lines: list[str]) -> list[LabelledRecord]:
        """The records after the settings line; only the last line may be torn (a write cut off by a kill)."""
        records = []
        for number, line in enumerate(lines[1:], start=2):
            try:
                records.append(LabelledRecord.model_validate_json(line))
            except ValidationError as exc:
                if number == len(lines):
                    break
                raise ValueError(f"{self.path}:{number}: not a finished record ({exc.errors()[0]['msg']}); "
                                 "delete the file to measure the method afresh") from None
        return records

    def add(self, record: LabelledRecord) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(record.model_dump_json() + "\n")

    def wall_s(self, ids: Sequence[str]) -> float:
        """The measured wall time of the finished records among `ids`."""
        return sum(self.done[i].stats.wall_s for i in ids if i in self.done)


def reusable_row(out: Path, method: str, cfg: BenchConfig) -> MeasuredRow | None:
    """A row measured earlier with the same settings; a fresh bench keeps only rows measured fresh."""
    path = _row_path(out, method)
    if not path.exists():
        return None
    saved = MeasuredRow.model_validate_json(path.read_text(encoding="utf-8"))
    return saved if saved.settings == cfg.settings_key(method) and (saved.fresh or not cfg.fresh) else None


def price_for(dataset: DatasetConfig, cfg: BenchConfig, model: str) -> tuple[str, Price]:
    prices = dataset.section("bench").get("prices") or {}
    name = cfg.price_as or model
    entry = prices.get(name) or {}
    cached = entry.get("cached_input")
    return name, Price(float(entry.get("input", 0.0)), float(entry.get("output", 0.0)),
                       None if cached is None else float(cached))


def student_endpoint(cfg: BenchConfig) -> contextlib.AbstractContextManager[Endpoint]:
    """The student's endpoint: the one given, else the embedded server with the merged GGUF or base + adapter."""
    from ie.llm.local import ensure_endpoint

    if cfg.student_endpoint:
        return ensure_endpoint(cfg.student_model, cfg.student_endpoint, api_key_env=cfg.api_key_env)
    return ensure_endpoint(cfg.student_gguf or cfg.student_base, lora=[cfg.student_adapter] if cfg.student_adapter
                           else [], n_parallel=cfg.concurrency, threads=cfg.threads)


def _bar(method: str, total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc=method, unit="sent", file=sys.stderr, dynamic_ncols=True)


async def _timed(coro) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await coro
    return result, time.perf_counter() - started


async def resumed(out: Path, method: str, cfg: BenchConfig, records: Sequence[Record],
                  label: Callable[..., Awaitable[list[LabelledRecord]]]) -> tuple[list[LabelledRecord], float]:
    """(records in input order, wall time): `label(todo, on_record=...)` runs on the records not finished by
    an earlier, stopped bench (see `PartialRow`), with a progress bar. Raises `IncompleteRun` when some did
    not finish: those are kept for the next bench to label, never scored."""
    partial = PartialRow(out, method, cfg.settings_key(method), fresh=cfg.fresh)
    todo = [r for r in records if r.id not in partial.done]
    with _bar(method, len(records)) as bar:
        bar.update(len(records) - len(todo))

        def finished(record: LabelledRecord) -> None:
            if failure_of(record) is None:
                partial.add(record)
            bar.update(1)

        new, wall = await _timed(label(todo, on_record=finished))
    failures = [Failure.of(r) for r in new if failure_of(r) is not None]
    listed_in = out / "rows" / f"{method}.failures.jsonl"
    write_failures(listed_in, failures)
    if failures:
        raise IncompleteRun(failures, len(records), listed_in)
    by_id = {**partial.done, **{r.id: r for r in new}}
    return [by_id[r.id] for r in records], wall + partial.wall_s([r.id for r in records])


def teacher_config(dataset: DatasetConfig, cfg: BenchConfig, method: str) -> TeacherConfig:
    """The teacher settings a bench labels `method` with: the dataset config's `teacher:` section, with the bench's
    teacher endpoint or model and concurrency."""
    from teacher.config import TeacherConfig

    return TeacherConfig.from_sources(dataset.section("teacher"), {
        "method": method, "concurrency": cfg.concurrency, "progress": False, "config": cfg.config,
        "endpoint": cfg.endpoint, "model": cfg.model, "model_name": cfg.model_name, "api_key_env": cfg.api_key_env},
        cfg.config)


async def run_teacher_methods(methods: Sequence[str], records: Sequence[Record], dataset: DatasetConfig,
                              cfg: BenchConfig, out: Path) -> dict[str, MeasuredRow]:
    """method -> its saved row; each row is saved as soon as its method finishes, so a stopped bench keeps it.
    The methods share one labeller (`teacher.labeller`, as `teacher run` opens it) and its call cache."""
    from teacher.labeller import open_labeller
    from teacher.runner import label_records

    rows: dict[str, MeasuredRow] = {}
    cache = None if cfg.fresh else out / "calls-teacher.sqlite"
    async with open_labeller(teacher_config(dataset, cfg, methods[0]), cache, cfg.threads) as labeller:
        ep = labeller.endpoint
        for method in methods:
            preds, wall = await resumed(out, method, cfg, records, functools.partial(
                label_records, method=method, schema=dataset.task_schema, client=labeller.client,
                cfg=teacher_config(dataset, cfg, method), mentions=dataset.mentions))
            overhead = await measure_overhead(ep, preds, wall, cfg.concurrency) if cfg.overhead else None
            rows[method] = _save_row(out, method, cfg, preds, wall, ep.model, overhead)
    return rows


async def run_student(records: Sequence[Record], dataset: DatasetConfig, cfg: BenchConfig, out: Path
                      ) -> tuple:
    from ie.student_format import mention_rules
    from serve.client import StudentExtractor

    with student_endpoint(cfg) as ep:
        cache = None if cfg.fresh else out / "calls-student.sqlite"
        client = LLMClient.from_endpoints([ep], cache_path=cache, concurrency=cfg.concurrency)
        try:
            extractor = StudentExtractor(client, dataset.task_schema, rules=mention_rules(dataset),
                                         concurrency=cfg.concurrency,
                                         halves_from_tokens=dataset.serve.halves_from_tokens)
            preds, wall = await resumed(out, "student", cfg, records, extractor.extract_batch)
        finally:
            await client.aclose()
    return list(preds), wall, student_model_name(cfg), None


def student_model_name(cfg: BenchConfig) -> str:
    """The student row's model: the merged GGUF's file name, base + adapter, or the endpoint's model."""
    if cfg.student_gguf:
        return Path(cfg.student_gguf).name
    if cfg.student_endpoint:
        return cfg.student_model
    from ie.llm.local import load_catalogue

    return f"{cfg.student_base or load_catalogue().student_base}+{Path(cfg.student_adapter).name}"


async def measure_overhead(ep: Endpoint, preds: Sequence[LabelledRecord], wall: float, concurrency: int
                           ) -> Overhead:
    """Replay the run's fresh calls as plain requests of the same prompt/completion size, straight to the
    server, with the same concurrency; the gap to the teacher's wall time is what the toolkit costs."""
    from openai import AsyncOpenAI

    calls = [c for r in preds if r.debate for c in r.debate.calls if not c.cached]
    sdk = AsyncOpenAI(base_url=ep.url, api_key="no-key", max_retries=2)
    gate = asyncio.Semaphore(concurrency)

    async def replay(i: int, call: CallLog) -> None:
        filler = f"{i} " + "a " * max(call.prompt_tokens - 12, 1)
        async with gate:
            await sdk.chat.completions.create(
                model=ep.model, messages=[{"role": "user", "content": filler}], temperature=0.0,
                max_tokens=max(call.completion_tokens, 1), extra_body={"ignore_eos": True})

    _, replay_wall = await _timed(asyncio.gather(*(replay(i, c) for i, c in enumerate(calls))))
    await sdk.close()
    return Overhead(teacher_wall_s=round(wall, 3), replay_wall_s=round(replay_wall, 3), replayed_calls=len(calls),
                    overhead_fraction=round((wall - replay_wall) / wall, 4) if wall else 0.0)


def _save_row(out: Path, method: str, cfg: BenchConfig, preds: list[LabelledRecord], wall: float, model: str,
              overhead: Overhead | None) -> MeasuredRow:
    write_records(out / "predictions" / f"{method}.jsonl", preds)
    row = MeasuredRow(settings=cfg.settings_key(method), wall_s=wall, model=model,
                      measured_at=time.strftime("%Y-%m-%dT%H:%M:%S"), fresh=cfg.fresh, overhead=overhead)
    write_json(_row_path(out, method), row.model_dump(mode="json"))
    return row


def _metrics(method: str, row: MeasuredRow, gold: list[Record], out: Path, dataset: DatasetConfig,
             cfg: BenchConfig) -> MethodMetrics:
    from ie.scoring import evaluate

    preds = read_labelled(out / "predictions" / f"{method}.jsonl")
    scores = evaluate(gold, preds, dataset.task_schema, **score_options(dataset).model_dump())
    _, price = price_for(dataset, cfg, row.model)
    return calculate_metrics(method, row.model, scores, preds, row.wall_s, price)


async def run_bench(cfg: BenchConfig, dataset: DatasetConfig) -> Path:
    from ie.datasets import load_slice

    gold = load_slice(dataset, cfg.split, cfg.offset, cfg.limit)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = {m: row for m in cfg.methods if (row := reusable_row(out, m, cfg))}
    inputs = [r.unlabelled() for r in gold]
    todo = [m for m in cfg.methods if m not in rows and m != "student"]
    if todo:
        rows.update(await run_teacher_methods(todo, inputs, dataset, cfg, out))
    if "student" in cfg.methods and "student" not in rows:
        rows["student"] = _save_row(out, "student", cfg, *(await run_student(inputs, dataset, cfg, out)))
    metrics = [_metrics(m, rows[m], gold, out, dataset, cfg) for m in cfg.methods]
    add_ratios(metrics)
    price_name, _ = price_for(dataset, cfg, metrics[0].model if metrics else "")
    sentences = f"{cfg.offset + 1}-{cfg.offset + len(gold)}"
    header = {"dataset": f"{dataset.name} {cfg.split} {sentences}", "sentences": len(gold), "priced as": price_name,
              "concurrency": cfg.concurrency,
              "rows measured": {m: f"{rows[m].measured_at} ({'fresh, no cache' if rows[m].fresh else 'cache on'})"
                                for m in cfg.methods}}
    if "student" in cfg.methods:
        header["student_adapter"] = cfg.student_used()
    overhead = {m: o.model_dump(mode="json") for m in cfg.methods if (o := rows[m].overhead)}
    if overhead:
        header["orchestration overhead"] = overhead
    target, student = teacher_target(metrics), student_target(metrics)
    write_json(out / "bench.json", {**header, "rows": [m.as_dict() for m in metrics],
                                    "teacher_target": target.as_dict() if target else None,
                                    **({"student_target": student.as_dict()} if student else {})})
    write_markdown(out / "bench.md", metrics, header, target, student)
    write_plot(out / "bench.png", metrics)
    write_viewer(out, gold, dataset, cfg, header["dataset"])
    return out


def write_viewer(out: Path, gold: list[Record], dataset: DatasetConfig, cfg: BenchConfig, name: str) -> Path:
    """The bench's page (`ie.viewer`): each method's records against gold, one method at a time."""
    from ie.view import run_view
    from ie.viewer import PAGE, write_page

    runs = {m: read_labelled(out / "predictions" / f"{m}.jsonl") for m in cfg.methods}
    view = run_view(f"Bench: {name}", [f"Methods: {', '.join(cfg.methods)}; scores in bench.md."], runs, gold,
                    dataset.task_schema, score_options(dataset))
    return write_page(out / PAGE, view)
