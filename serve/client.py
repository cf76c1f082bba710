"""Ask a served student for entities and relations: any OpenAI-compatible endpoint (vLLM, llama.cpp, OpenAI).

    from serve.client import extract
    records = extract(["Ronald Reagan was born in Tampico ."], endpoint="http://127.0.0.1:8000/v1",
                      model="student", config="conll04")

    python -m serve.client --endpoint URL --model student --input FILE --config configs/conll04.yaml --out OUT.jsonl

The prompt is the one the student was trained on (`ie.student_format.build_messages`), the answer is constrained by
`response_format` json_schema (the schema's types as enums), and spans are grounded as the teacher grounds a
joint answer (`ie.student_format.parse_answer`). Each output record has:
- `entities` (`start`, `end`, `type`, `text`) and `relations` (`head`, `tail` = entity indices, `type`);
- `stats`: `calls`, `prompt_tokens`, `completion_tokens`, `failed_calls`, `truncated_calls` (the answer ran to
  `max_tokens`; its complete items were kept), `ungrounded`, `invalid`, `cached`, `wall_s`, and `error` when the
  answer never validated (the labels are then what could be salvaged from its JSON, e.g. a list longer than a
  `mentions:` cap, which `json_schema` does not send to the server).
A record whose call got no answer (refused, 401, 5xx, timeout, context overflow) or one holding no JSON object
after the re-asks ("no valid answer"), or that ran past its time budget (`--timeout-record-s`, on by default; all
its calls together, windows and halves included), is unfinished (`ie.failures`): it has only `stats.failed` (the
reason), `stats.error` and `wall_s`.
`extract` raises `IncompleteRun` for one; the CLI leaves it out of --out, lists it in `<out>.failures.jsonl`
and exits 1. The CLI writes each record as it finishes and caches every call (`<out>.calls.sqlite`, or
--cache), so a re-run, after a failure, a kill or Ctrl-C, repeats no call of a finished record; one CLI run
writes an --out at a time. A run that stops (an endpoint that answers nothing or nothing valid, a full disk)
ends with one line naming the cause.
A text longer than the endpoint's context leaves room for is labelled in windows of half the answer length
(`--max-tokens`: an answer lists what its window holds) and merged (`ie.windows`: relations across windows are
dropped); such a record also has `windows` (each window's `start`, `end`) and `stats.windows`.
A schema may give long texts a second look (the config's `serve: halves_from_tokens`, or --halves-from-tokens): a
text of that many estimated tokens is labelled whole and in two overlapping halves, and the halves' mentions are
added where the whole text's answer has none (`ie.windows.add_unseen`); its `windows` list the halves.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ie.cli import report_stop, sigterm_as_interrupt
from ie.config import ConfigError, DatasetConfig, TaskSchema, load_config, resolve_config_path, score_options
from ie.failures import (
    Failure,
    IncompleteRun,
    all_finished,
    append_or_stop,
    failure_of,
    within_budget,
    write_failures,
)
from ie.llm.client import STRUCTURED_OUTPUTS, Endpoint, LLMClient, Timeouts
from ie.llm.types import RunStopped, SamplingParams
from ie.logs import add_verbose_flag, setup_logging
from ie.mentions import MentionRules
from ie.record_stats import RecordStats
from ie.records import LabelledRecord, WindowLabel
from ie.runlock import FolderBusy, RunLock
from ie.schema import Record, as_records, write_records
from ie.student_format import answer_model, build_messages, mention_rules, parse_answer
from ie.windows import add_unseen, estimate_tokens, label_in_windows, merge_stats, merge_windows, split_halves
from serve.windows import student_budget

RECORD_BUDGET_S = 600.0  # a record is one call (a long text: a few): ten minutes is far past any healthy one
# 384: the student's longest complete answer on the first 50 CoNLL04 dev sentences was 263 tokens; 8 of 50 ran
# on to a 1,024 limit repeating items (a cut-off answer keeps its complete items, see ie.llm.truncated).
DEFAULT_PARAMS = SamplingParams(temperature=0.0, seed=0, max_tokens=384)


def unfinished(record: Record, reason: str, error: str, started: float) -> LabelledRecord:
    """`record` with no labels, marked failed for `reason` (never written as a finished record)."""
    stats = RecordStats(failed=reason, error=error, wall_s=round(time.perf_counter() - started, 4))
    return LabelledRecord(id=record.id, text=record.text, tokens=record.tokens, stats=stats)


class StudentExtractor:
    """The student behind an `LLMClient`: its retries, re-asks, cache and concurrency limit apply."""

    def __init__(self, client: LLMClient, schema: TaskSchema, params: SamplingParams = DEFAULT_PARAMS,
                 rules: MentionRules | None = None, concurrency: int = 8, budget_s: float | None = RECORD_BUDGET_S,
                 context_tokens: int | None = None, halves_from_tokens: int | None = None):
        self.client, self.schema, self.params, self.rules = client, schema, params, rules
        self.context_tokens = context_tokens  # used where the server reports no context (see ie.windows)
        self.halves_from_tokens = halves_from_tokens  # a second look at texts this long (`serve:` section)
        self._answer_model = answer_model(schema, rules.profile if rules else None)
        if concurrency < 1:
            raise ValueError(f"concurrency: must be at least 1, got {concurrency}")  # 0 would wait forever
        self.concurrency = concurrency
        self.budget_s = budget_s  # seconds a record may take, re-asks included (None: no budget)

    async def extract_record(self, record: Record) -> LabelledRecord:
        """One call for `record` (a whole text, a window or a half); unfinished when it got no valid answer. The
        time budget is the whole record's (`label`), not each call's."""
        started = time.perf_counter()
        messages = build_messages(record.text, self.schema)
        result, failure = await within_budget(self.client.structured(messages, self._answer_model, self.params),
                                              None)
        if failure is not None:
            return unfinished(record, *failure, started)
        (c,) = result  # type: ignore[misc]
        parsed = parse_answer(record.text, c.value if c.ok else c.raw, self.schema, record.id, self.rules,
                              record.tokens)
        if parsed.stats.error:  # no JSON object to salvage: an empty record is no result
            return unfinished(record, "no valid answer", f"{c.error}; last answer: {c.raw[:500]!r}", started)
        stats = RecordStats(calls=c.usage.calls, prompt_tokens=c.usage.prompt_tokens,
                            completion_tokens=c.usage.completion_tokens,
                            prefix_cached_tokens=c.usage.prefix_cached_tokens, failed_calls=int(not c.ok),
                            truncated_calls=int(c.truncated), cached=c.cached, ungrounded=parsed.stats.ungrounded,
                            invalid=parsed.stats.invalid, wall_s=round(time.perf_counter() - started, 4),
                            **({"error": c.error} if not c.ok and c.error else {}))
        return LabelledRecord(id=record.id, text=record.text, tokens=record.tokens, entities=parsed.entities,
                              relations=parsed.relations, stats=stats)

    async def second_look(self, record: Record, whole: LabelledRecord, started: float) -> LabelledRecord:
        """`whole` plus the mentions (and their relations) that the text's two halves find where it has none
        (`ie.windows.add_unseen`); unfinished when a half did not finish. `wall_s` is the time since `started`.
        A text too short to halve is `whole` (its one "half" would ask the same call again)."""
        halves = split_halves(record)
        if len(halves) < 2:
            return whole
        parts = await asyncio.gather(*(self.extract_record(h.record) for h in halves))
        stats = merge_stats([whole.stats, *(p.stats for p in parts)])
        stats.wall_s = round(time.perf_counter() - started, 4)
        failed = next((p for p in parts if failure_of(p) is not None), None)
        if failed is not None:
            return unfinished(record, failed.stats.failed, failed.stats.error, started)
        labels = add_unseen(whole, merge_windows(record, halves, parts))
        stats.windows = len(halves)
        return LabelledRecord(id=record.id, text=record.text, tokens=record.tokens, entities=labels.entities,
                              relations=labels.relations, stats=stats,
                              windows=[WindowLabel(start=h.start, end=h.end) for h in halves])

    async def label(self, record: Record, window_budget: int, started: float) -> LabelledRecord:
        """`record` in one call (in windows where it is longer than the context), then a second look in halves
        where it is long enough to have one."""
        out = await label_in_windows(record, window_budget, self.extract_record, self.params.max_tokens // 2)
        if (self.halves_from_tokens and out.windows is None and failure_of(out) is None
                and estimate_tokens(record.text) >= self.halves_from_tokens):
            out = await self.second_look(record, out, started)
        return out

    async def extract_batch(self, items: Sequence[str | Record],
                            on_record: Callable[[LabelledRecord], None] | None = None) -> list[LabelledRecord]:
        """One record per item, in order; a `str` item gets the id of its position. At most `concurrency`
        records are in flight, so a record's `wall_s` is its own service time, not its wait in the queue."""
        records = as_records(items)
        gate = asyncio.Semaphore(self.concurrency)
        budget = await student_budget(self.client, self.schema, self.params.max_tokens, self.context_tokens)

        async def one(record: Record) -> LabelledRecord:
            async with gate:
                started = time.perf_counter()
                out, failure = await within_budget(self.label(record, budget, started), self.budget_s)
                if failure is not None:
                    out = unfinished(record, *failure, started)
            if on_record is not None:
                on_record(out)
            return out

        return list(await asyncio.gather(*(one(r) for r in records)))


async def extract_async(texts: Sequence[str | Record], endpoint: str, model: str, schema: TaskSchema, *,
                        rules: MentionRules | None = None, api_key_env: str | None = None, concurrency: int = 8,
                        cache_path: str | Path | None = None, params: SamplingParams = DEFAULT_PARAMS,
                        max_reasks: int = 2, structured_output: str = "json_schema", timeouts: Timeouts = Timeouts(),
                        budget_s: float | None = RECORD_BUDGET_S, retries: int = 4,
                        context_tokens: int | None = None, halves_from_tokens: int | None = None,
                        on_record: Callable[[LabelledRecord], None] | None = None) -> list[LabelledRecord]:
    """The records, unfinished ones included (marked `stats.failed`); `on_record` sees each as it ends.
    `budget_s`: seconds a record may take, re-asks included (None: no budget). `halves_from_tokens`: see the
    module docstring (None: no second look)."""
    ep = Endpoint(endpoint, model, api_key_env, timeouts=timeouts, structured_output=structured_output)
    client = LLMClient.from_endpoints([ep], cache_path=cache_path, concurrency=concurrency,
                                      max_parse_retries=max_reasks, max_retries=retries)
    try:
        extractor = StudentExtractor(client, schema, params, rules, concurrency, budget_s, context_tokens,
                                     halves_from_tokens)
        return await extractor.extract_batch(texts, on_record)
    finally:
        await client.aclose()


def extract(texts: str | Sequence[str | Record], *, endpoint: str, model: str, config: str | Path,
            **kwargs) -> LabelledRecord | list[LabelledRecord]:
    """One text -> one record; a list -> a list. `config`: the dataset config (path or name) the student was
    trained for: its schema, mention rules and `serve:` options.
    Raises `IncompleteRun` when a record did not finish (see the module docstring)."""
    dataset = load_config(resolve_config_path(str(config)))
    items = [texts] if isinstance(texts, str) else list(texts)
    kwargs.setdefault("halves_from_tokens", dataset.serve.halves_from_tokens)
    records = all_finished(asyncio.run(extract_async(items, endpoint, model, dataset.task_schema,
                                                     rules=mention_rules(dataset), **kwargs)))
    return records[0] if isinstance(texts, str) else records


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m serve.client", description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--endpoint", required=True, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", required=True, help="served model or LoRA adapter name (e.g. student)")
    p.add_argument("--input", type=Path, required=True, help="records to label (any ie.datasets input)")
    p.add_argument("--config", required=True, help="dataset config (path or name) giving the schema")
    p.add_argument("--out", type=Path, required=True, help="output records JSONL")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    p.add_argument("--max-tokens", type=int, default=DEFAULT_PARAMS.max_tokens, help="answer length limit")
    p.add_argument("--max-reasks", type=int, default=2, help="re-asks of an answer that fails validation")
    p.add_argument("--cache", type=Path, default=None, help="sqlite call cache file (default <out>.calls.sqlite)")
    p.add_argument("--no-cache", action="store_true", help="cache no call (a re-run asks every call again)")
    p.add_argument("--api-key-env", default=None, help="NAME of the environment variable holding the API key")
    p.add_argument("--limit", type=int, default=None, help="label only the first N records")
    p.add_argument("--context-tokens", type=int, default=None, help="context tokens of one request where the "
                   "server reports none (llama.cpp's /props does; this may narrow it): longer texts go in windows")
    p.add_argument("--halves-from-tokens", type=int, default=None,
                   help="a second look, in two halves, at texts of this many estimated tokens (about 2 a word; "
                        "default: the config's serve.halves_from_tokens; 0: none)")
    p.add_argument("--structured-output", choices=STRUCTURED_OUTPUTS, default="json_schema",
                   help="json_schema (response_format: vLLM, OpenAI) or llguidance (llama.cpp: compact JSON)")
    p.add_argument("--retries", type=int, default=4, help="re-sends of a call refused or answered 429/5xx")
    for name, flag in (("connect_s", "connect-s"), ("first_token_s", "first-token-s"),
                       ("min_tokens_per_s", "tokens-per-s"), ("first_answer_s", "first-answer-s")):
        p.add_argument(f"--timeout-{flag}", type=float, default=getattr(Timeouts, name), help=Timeouts.help(name))
    p.add_argument("--timeout-record-s", type=float, default=RECORD_BUDGET_S,
                   help="seconds one record may take, re-asks included; past it the record fails (0 = no budget)")
    add_verbose_flag(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    if (args.concurrency < 1 or args.max_tokens < 1 or (args.context_tokens or 1) < 1 or args.max_reasks < 0
            or args.retries < 0 or (args.halves_from_tokens or 0) < 0):
        raise SystemExit("--concurrency, --max-tokens and --context-tokens must be >= 1, --max-reasks, --retries "
                         "and --halves-from-tokens >= 0")
    from ie.datasets import load_input

    try:
        dataset = load_config(resolve_config_path(args.config))
        gold = load_input(args.input)[: args.limit]
        if not gold:
            raise ConfigError(f"{args.input}: no records to label (the input is empty)")
        timeouts = Timeouts(args.timeout_connect_s, args.timeout_first_token_s, args.timeout_tokens_per_s,
                            args.timeout_first_answer_s)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    command = "python -m serve.client " + shlex.join(argv)
    try:
        with RunLock(args.out, args.out.with_name(f".{args.out.name}.lock")), sigterm_as_interrupt():
            return _label_cli(args, dataset, gold, timeouts, command)
    except FolderBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return report_stop(exc, f"the finished records are in {args.out} and their calls cached", command)


def _label_cli(args: argparse.Namespace, dataset: DatasetConfig, gold: list[Record], timeouts: Timeouts,
               command: str) -> int:
    """Label the input into --out, each record written as it finishes; the closing lines; the exit code."""
    records, stop = [r.unlabelled() for r in gold], None
    seen: list[LabelledRecord] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("", encoding="utf-8")

    def on_record(record: LabelledRecord) -> None:
        if failure_of(record) is None:
            append_or_stop(args.out, record)
        seen.append(record)

    started = time.perf_counter()
    try:
        asyncio.run(extract_async(
            records, args.endpoint, args.model, dataset.task_schema, rules=mention_rules(dataset),
            api_key_env=args.api_key_env, concurrency=args.concurrency,
            cache_path=None if args.no_cache else args.cache or args.out.with_suffix(".calls.sqlite"),
            params=SamplingParams(temperature=0.0, seed=0, max_tokens=args.max_tokens), max_reasks=args.max_reasks,
            structured_output=args.structured_output, timeouts=timeouts, budget_s=args.timeout_record_s or None,
            retries=args.retries, context_tokens=args.context_tokens, on_record=on_record,
            halves_from_tokens=dataset.serve.halves_from_tokens if args.halves_from_tokens is None
            else args.halves_from_tokens or None))
    except RunStopped as exc:
        stop = exc
    order = {r.id: i for i, r in enumerate(records)}
    seen.sort(key=lambda r: order[r.id])
    out = [r for r in seen if failure_of(r) is None]
    failures = [Failure.of(r) for r in seen if failure_of(r) is not None]
    if stop is None:
        write_records(args.out, out)  # input order
    else:
        ended = {r.id for r in seen}
        failures += [Failure.stopped(r, stop) for r in records if r.id not in ended]
    write_failures(args.out.with_suffix(".failures.jsonl"), failures)
    _write_run(args, out, failures, time.perf_counter() - started)
    write_viewer(args.out.with_suffix(".html"), out, gold, dataset, args.model)
    print(summary(len(records), out, gold, dataset, args.out, len(failures)))
    if failures:
        incomplete = IncompleteRun(failures, len(records), args.out.with_suffix(".failures.jsonl"), stop)
        print(f"error: {incomplete.summary(command)}", file=sys.stderr)
        return 1
    return 0


def _write_run(args: argparse.Namespace, out: Sequence[LabelledRecord], failures: Sequence[Failure],
               wall_s: float) -> None:
    """`<out>.run.json`: the arguments, the counts and the totals of the finished records."""
    stats = [r.stats for r in out]
    totals = {k: sum(getattr(s, k) or 0 for s in stats) for k in (
        "calls", "prompt_tokens", "completion_tokens", "failed_calls", "truncated_calls", "ungrounded", "invalid")}
    run = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
           "records": len(out), "failed": len(failures), "totals": totals, "wall_s": round(wall_s, 3)}
    args.out.with_suffix(".run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")


def write_viewer(path: Path, out: Sequence[LabelledRecord], gold: Sequence[Record], dataset: DatasetConfig, model: str
                 ) -> Path:
    """The run's page (`ie.viewer`) beside its records: what the student found, against the input's own labels
    when it has any."""
    from ie.view import run_view
    from ie.viewer import write_page

    has_gold = any(r.entities or r.relations for r in gold)
    view = run_view(f"Student run: {model}", [f"{len(out)} records of {dataset.name}, labelled by {model}."],
                    {"student": out}, gold if has_gold else None, dataset.task_schema, score_options(dataset))
    return write_page(path, view)


def summary(total: int, out: Sequence[LabelledRecord], gold: Sequence[Record], dataset: DatasetConfig, path: Path,
            failed: int) -> str:
    """The run's closing lines; the finished records scored against the input's own labels when it has any."""
    from ie.scoring import evaluate
    from ie.summary import RunSummary

    metrics = None
    if any(r.entities or r.relations for r in gold):
        done = {r.id for r in out}
        metrics = evaluate([g for g in gold if g.id in done], list(out), schema=dataset.task_schema,
                           **score_options(dataset).model_dump())
    return RunSummary.of("student", total, out, failed, metrics,
                         {"records": path, "run": path.with_suffix(".run.json"),
                          "viewer": path.with_suffix(".html")}).text()


if __name__ == "__main__":
    sys.exit(main())
