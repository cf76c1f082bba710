"""Label texts with any method, a teacher method or the student, given a schema: the one module that composes
both stages for a library user (as `serve.bench` does for the bench).

It resolves the schema, names or starts the endpoint, and hands the records to `teacher.runner.label_records` or
`serve.client.extract_async`; their labelling is not redone here. An unfinished record is never returned:
`IncompleteRun` names it (`ie.failures`).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ie.config import ConfigError, DatasetConfig, TaskSchema, load_config, resolve_config_path
from ie.failures import all_finished
from ie.llm.client import Endpoint
from ie.llm.local import ensure_endpoint
from ie.records import LabelledRecord
from ie.schema import Record, as_records
from ie.student_format import mention_rules
from serve.client import extract_async
from teacher.config import TeacherConfig
from teacher.labeller import open_labeller
from teacher.method_names import METHOD_NAMES
from teacher.runner import label_records

METHODS = (*METHOD_NAMES, "student")
# TeacherConfig fields that a run over a dataset reads (`python -m teacher run`), or that are arguments here.
RUN_ONLY = frozenset({"config", "split", "input", "limit", "offset", "out", "cache", "progress", "re_mode",
                      "method", "endpoint", "model", "model_name"})
TEACHER_SETTINGS = frozenset(f.name for f in dataclasses.fields(TeacherConfig)) - RUN_ONLY
# The student's settings are `serve.client.extract_async`'s keyword arguments; its mention rules are the schema's.
STUDENT_SETTINGS = {name: p.default for name, p in inspect.signature(extract_async).parameters.items()
                    if p.kind is p.KEYWORD_ONLY and name != "rules"}
Schema = str | Path | Mapping[str, Any] | TaskSchema | DatasetConfig
Labeller = Callable[[list[Record]], Awaitable[list[LabelledRecord]]]


def dataset_config(schema: Schema) -> DatasetConfig:
    """The schema as a dataset config: a config file's name or path (`conll04`, `configs/scierc.yaml`: its
    `mentions:` rules and `teacher:` settings apply), a mapping like a config's `schema:` section, a `TaskSchema`
    (both with the default mention rules), or a `DatasetConfig`."""
    if isinstance(schema, DatasetConfig):
        return schema
    if isinstance(schema, (str, Path)):
        return load_config(resolve_config_path(str(schema)))
    if isinstance(schema, Mapping):
        schema = TaskSchema.model_validate(dict(schema))
    if isinstance(schema, TaskSchema):
        return DatasetConfig.model_validate({"name": "schema", "format": "records", "schema": schema})
    raise TypeError(f"schema: give a config name or path, a mapping of entity_types (and relation_types), a "
                    f"TaskSchema or a DatasetConfig; got {type(schema).__name__}")


def _check_settings(method: str, settings: Mapping[str, Any]) -> None:
    known = set(STUDENT_SETTINGS) if method == "student" else TEACHER_SETTINGS
    unknown = sorted(set(settings) - known)
    if unknown:
        raise TypeError(f"unknown setting {unknown[0]!r} for method {method!r}; its settings: {sorted(known)}")


@contextlib.contextmanager
def _student_endpoint(endpoint: str | None, model: str | None, model_name: str | None, adapter: str | Path | None,
                      settings: Mapping[str, Any]) -> Iterator[Endpoint]:
    if endpoint and (model or adapter):
        raise ConfigError("model, adapter: they start the embedded server; drop them when giving endpoint")
    if not endpoint and not (adapter or model):
        raise ConfigError("method 'student' needs endpoint=URL with model_name=NAME, adapter=PATH.gguf (a GGUF "
                          "LoRA served on the embedded model) or model=STUDENT.gguf (merged: student.gguf_merge)")
    server = {"lora": [adapter] if adapter else [],
              "n_parallel": settings.get("concurrency", STUDENT_SETTINGS["concurrency"])}
    with ensure_endpoint(model_name if endpoint else model, endpoint, api_key_env=settings.get("api_key_env"),
                         **({} if endpoint else server)) as ep:
        yield ep


def _plan(method: str, dataset: DatasetConfig, endpoint: str | None, model: str | None, model_name: str | None,
          adapter: str | Path | None, settings: Mapping[str, Any]) -> Labeller:
    """How the method labels records (serving it while it does), every argument checked before any server
    starts."""
    if method not in METHODS:
        raise ConfigError(f"method: unknown method {method!r}; choose one of {list(METHODS)}")
    _check_settings(method, settings)
    if method == "student":
        if settings.get("concurrency", 1) < 1:  # the teacher's settings check their own (TeacherConfig)
            raise ConfigError(f"concurrency: must be at least 1, got {settings['concurrency']}")
        serving = _student_endpoint(endpoint, model, model_name, adapter, settings)

        async def student(records: list[Record]) -> list[LabelledRecord]:
            with serving as ep:
                kwargs = {"structured_output": ep.structured_output,
                          "halves_from_tokens": dataset.serve.halves_from_tokens, **settings}
                return await extract_async(records, ep.url, ep.model, dataset.task_schema,
                                           rules=mention_rules(dataset), **kwargs)
        return student
    if adapter:
        raise ConfigError(f"adapter: only method 'student' runs a LoRA adapter, not {method!r}")
    cfg = TeacherConfig.from_sources(dataset.section("teacher"), {
        **settings, "method": method, "endpoint": endpoint, "model": model, "model_name": model_name,
        "progress": False}, dataset.source or "schema")

    async def teacher(records: list[Record]) -> list[LabelledRecord]:
        async with open_labeller(cfg) as labeller:
            return await label_records(records, method, dataset.task_schema, labeller.client, cfg,
                                       mentions=dataset.mentions)
    return teacher


async def extract_batch_async(texts: Sequence[str | Record], *, schema: Schema, method: str = "crossagentie",
                              endpoint: str | None = None, model: str | None = None, model_name: str | None = None,
                              adapter: str | Path | None = None, **settings: Any) -> list[LabelledRecord]:
    """`extract_batch` for a caller inside an event loop (the embedded server, when one is started, blocks the
    loop while it starts and stops)."""
    if isinstance(texts, str):
        raise TypeError("extract_batch takes a list of texts; extract takes one")
    records = as_records(texts)
    label = _plan(method, dataset_config(schema), endpoint, model, model_name, adapter, settings)
    return all_finished(await label(records))


def extract_batch(texts: Sequence[str | Record], *, schema: Schema, method: str = "crossagentie",
                  endpoint: str | None = None, model: str | None = None, model_name: str | None = None,
                  adapter: str | Path | None = None, **settings: Any) -> list[LabelledRecord]:
    """Label `texts` (strings, or `ie.schema.Record`s) with `method`: one record each, in order.

    schema: required; a config name or path (`"conll04"`, `"configs/scierc.yaml"`: its `mentions:` rules and
        `teacher:` settings apply), a mapping like a config's `schema:` section (`{"entity_types": {"Party":
        {"description": ...}}, "relation_types": {...}}`), an `ie.config.TaskSchema` or `DatasetConfig`.
    method: a teacher method (`direct`, `one-step`, `direct-re`, `type-agents`, `self-consistency`,
        `soft-self-consistency`, `crossagentie`) or `student`.
    endpoint, model_name: an OpenAI-compatible base URL and the model (or LoRA adapter) served there. Without
        them the embedded llama.cpp server runs `model` (a catalogue name or GGUF path; default the catalogue's),
        with the GGUF LoRA `adapter` for the student (or `model` alone: a student merged by
        `python -m student.gguf_merge`).
    settings: a teacher method's `teacher.config.TeacherConfig` fields (`max_rounds=1`, `concurrency=4`,
        `api_key_env="OPENAI_API_KEY"`, ...; over the config's `teacher:` section), or the student's
        `serve.client.extract_async` keywords (`concurrency`, `max_reasks`, `timeouts`, ...); others are refused.

    Each record (`ie.records.LabelledRecord`) has `id` (the text's position, or the given record's id), `text`,
    `entities` (each `start`, `end`: character offsets into `text`, end exclusive; `type`; `text`, equal to
    `text[start:end]`; `confidence` in [0, 1] from a teacher method), `relations` (each `head`, `tail`: indices
    into `entities`; `type`; `confidence` from a teacher method) and `stats` (`ie.record_stats.RecordStats`:
    calls, tokens, `wall_s`, ...). A teacher method's record also has `confidence` (the record's) and `debate`
    (`ie.records.Transcript`); the student's, for a text too long for the endpoint's context, `windows`.
    Raises `ie.failures.IncompleteRun` when a record did not finish (a call got no answer or none that validated,
    or its time budget ran out): none is returned then; `ie.llm.types.RunStopped` when every record would fail
    alike (the endpoint answers no call within `Timeouts.first_answer_s`, or mostly no JSON at all).
    """
    return asyncio.run(extract_batch_async(texts, schema=schema, method=method, endpoint=endpoint, model=model,
                                           model_name=model_name, adapter=adapter, **settings))


def extract(text: str, *, schema: Schema, method: str = "crossagentie", endpoint: str | None = None,
            model: str | None = None, model_name: str | None = None, adapter: str | Path | None = None,
            **settings: Any) -> LabelledRecord:
    """One text's record: `extract_batch([text], ...)[0]` (the arguments and the record's keys are its)."""
    if not isinstance(text, str):
        raise TypeError(f"extract takes one text (a str), got {type(text).__name__}; extract_batch takes a list")
    (record,) = extract_batch([text], schema=schema, method=method, endpoint=endpoint, model=model,
                              model_name=model_name, adapter=adapter, **settings)
    return record
