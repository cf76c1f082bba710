"""The bench's typed config and its JSON writer, in a leaf module: the CLI (`serve.bench`, which starts
`serve.bench_run`) and the runner both import it, so the runner needs nothing of the CLI."""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ie.cli import opt
from ie.config import REPO_ROOT, ConfigError


@dataclass
class BenchConfig:
    config: str = opt("configs/conll04.yaml", "dataset config (schema, splits, bench: section), or just its name")
    split: str = opt("dev", "dataset split the methods are compared on")
    limit: int | None = opt(50, "compare on the first N sentences of the split (after --offset)")
    offset: int = opt(0, "skip the first N sentences (a fresh slice after the ones settings were chosen on)")
    methods: list[str] = opt(["direct", "type-agents", "crossagentie"],
                             "comma-separated methods: teacher methods (teacher.methods) and/or student")
    model: str | None = opt(None, "teacher's embedded llama.cpp model: catalogue name or GGUF path")
    endpoint: str | None = opt(None, "teacher's OpenAI-compatible base URL (instead of the embedded server)")
    model_name: str | None = opt(None, "model name at --endpoint")
    api_key_env: str | None = opt(None, "NAME of the env var holding --endpoint's API key")
    student_adapter: str | None = opt(None, "student's GGUF LoRA adapter, served on the embedded server")
    student_base: str | None = opt(None, "base model of --student-adapter (catalogue name or GGUF; default: the "
                                         "catalogue's student_base)")
    student_gguf: str | None = opt(None, "the student merged into one GGUF (python -m student.gguf_merge), served "
                                         "on the embedded server with no adapter")
    student_endpoint: str | None = opt(None, "student's OpenAI-compatible base URL (e.g. vLLM)")
    student_model: str = opt("student", "model or adapter name at --student-endpoint")
    concurrency: int = opt(1, "sentences in flight at once (match the server's parallel slots)")
    threads: int | None = opt(None, "CPU threads of an embedded server (default: all cores)")
    price_as: str | None = opt(None, "price the rows at this bench.prices entry's $ per 1M tokens")
    out: str = opt("runs/bench", "output folder (bench.json, bench.md, bench.png, rows/)")
    fresh: bool = opt(False, "bypass the call cache, so latencies are real; rows measured so are kept, so a "
                             "stopped fresh bench resumes")
    overhead: bool = opt(False, "replay each teacher method's fresh calls as plain requests: the toolkit's cost")

    def __post_init__(self) -> None:
        given = [flag for flag, value in (("--student-adapter", self.student_adapter),
                                          ("--student-gguf", self.student_gguf),
                                          ("--student-endpoint", self.student_endpoint)) if value]
        if "student" in self.methods and not given:
            raise ConfigError("bench.methods: 'student' needs --student-adapter PATH.gguf, --student-gguf "
                              "MERGED.gguf or --student-endpoint URL")
        if len(given) > 1:
            raise ConfigError(f"bench: {' and '.join(given)} name two students; give one")
        if self.student_base and not self.student_adapter:
            raise ConfigError("bench.student_base: --student-base is the base of --student-adapter; "
                              f"{given[0] if given else 'no student'} brings its own model")
        if self.endpoint and not self.model_name:
            raise ConfigError("bench.model_name: --endpoint needs --model-name")
        if self.offset < 0:
            raise ConfigError(f"bench.offset: must be 0 or more, got {self.offset}")
        if self.concurrency < 1:
            raise ConfigError(f"bench.concurrency: must be at least 1, got {self.concurrency}")

    def student_used(self) -> str:
        """The student a bench ran (bench.json's `student_adapter`): the model at --student-endpoint when one is
        given, else the --student-gguf or --student-adapter file."""
        if self.student_endpoint:
            return f"{self.student_model} at {self.student_endpoint}"
        return str(self.student_gguf or self.student_adapter)

    def settings_key(self, method: str) -> dict[str, Any]:
        """What a reusable row must have been measured with: the settings, and the content of everything that
        decides its labels (dataset config, prompts and code; the student's adapter or merged file)."""
        keep = ("config", "split", "offset", "limit", "concurrency", "model", "endpoint", "model_name")
        key = {k: getattr(self, k) for k in keep}
        key["inputs_sha256"] = self._digests["inputs"]
        if method == "student":
            key.update(student_adapter=self.student_adapter, student_base=self.student_base,
                       student_gguf=self.student_gguf,
                       student_endpoint=self.student_endpoint, student_model=self.student_model,
                       student_sha256=self._digests["student"])
        return key

    @functools.cached_property
    def _digests(self) -> dict[str, str]:
        """Read once per bench: the files are hashed as they were when it started."""
        code = sorted(p for d in LABELLING_CODE for p in (REPO_ROOT / d).rglob("*") if p.suffix in (".py", ".txt"))
        student = [REPO_ROOT / "serve" / "client.py"]  # the student's sampling settings
        student += [Path(p) for p in (self.student_adapter, self.student_gguf) if p]
        return {"inputs": files_digest([Path(self.config), *code]), "student": files_digest(student)}


LABELLING_CODE = ("ie", "teacher", "distill")


def files_digest(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
