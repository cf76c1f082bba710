"""ie.datasets.fetch: the real download code against a loopback server (127.0.0.1) serving small files laid out
like raw.githubusercontent.com; sizes and hashes checked, files laid out as the loaders read them; the pinned
hashes are those of ../shared/data's copies; a missing dataset's error names the fetch to run."""
import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ie.config import DATA_ENV, data_root, load_config, resolve_config_path
from ie.datasets import __main__ as datasets_cli
from ie.datasets import fetch as fetch_module
from ie.datasets import load_split
from ie.datasets.fetch import SOURCES, SourceFile, git_sha1, sources_of

CONFIGS = ("conll04", "conll2003", "scierc", "nyt", "semeval")
TRIMMED = "conll04/conll04_test.json"  # ../shared/data keeps only its first 150 records


def spert(*words):
    """A one-sentence SpERT file whose first word is a person."""
    return json.dumps([{"tokens": list(words), "entities": [{"type": "Peop", "start": 0, "end": 1}],
                        "relations": []}]).encode()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A loopback server laid out like raw.githubusercontent.com, holding three tiny CoNLL04 split files that
    SOURCES pins for the test: (its URL, a function serving new bytes for a split, the paths asked for)."""
    root, asked = tmp_path / "mirror", []
    files = {}
    for split, body in (("train", spert("Bo", "runs", ".")), ("dev", spert("Al", "sings", ".")),
                        ("test", spert("Ed", "naps", "."))):
        real = SOURCES["conll04"][f"conll04/conll04_{split}.json"]
        files[split] = SourceFile(real.snapshot, real.name, len(body), git_sha1(body))
        serve_as(root, files[split], body)
    monkeypatch.setitem(SOURCES, "conll04", {f"conll04/conll04_{s}.json": f for s, f in files.items()})

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            asked.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", functools.partial(serve_as, root), files, asked
    server.shutdown()
    server.server_close()


def serve_as(root, source, body):
    path = root / source.url("").lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)


def test_fetch_downloads_checks_and_lays_out_the_files_the_loader_reads(tmp_path, monkeypatch, mirror, capsys):
    url, serve, files, asked = mirror
    dest = tmp_path / "data"
    assert datasets_cli.main(["fetch", "conll04", "--dest", str(dest), "--mirror", url]) == 0
    assert capsys.readouterr().out.count("fetched: ") == 3 and len(asked) == 3
    assert not list(dest.rglob("*.part"))
    monkeypatch.setenv(DATA_ENV, str(dest))
    dev = load_split(load_config(resolve_config_path("conll04")), "dev")
    assert [(r.text, [e.text for e in r.entities]) for r in dev] == [("Al sings .", ["Al"])]
    assert datasets_cli.main(["fetch", "conll04", "--mirror", url]) == 0  # the data root: already there
    assert capsys.readouterr().out.count("present: ") == 3 and len(asked) == 3


@pytest.mark.parametrize("served, error", [
    (spert("Al", "sings", "!"), r"git blob sha1 [0-9a-f]{40}, expected "),  # same size, other bytes
    (spert("Al", "sings", "...."), r"\d+\+ bytes, expected \d+"),
    (None, r"HTTP 404"),
])
def test_a_file_of_another_size_or_hash_or_none_is_refused_and_nothing_is_left(tmp_path, mirror, capsys, served,
                                                                                  error):
    url, serve, files, _ = mirror
    if served is None:
        (tmp_path / "mirror" / files["dev"].url("").lstrip("/")).unlink()
    else:
        serve(files["dev"], served)
    dest = tmp_path / "data"
    assert datasets_cli.main(["fetch", "conll04", "--dest", str(dest), "--mirror", url]) == 1
    assert "conll04_dev.json: " in capsys.readouterr().err
    with pytest.raises(fetch_module.FetchError, match=error):
        list(fetch_module.fetch(load_config(resolve_config_path("conll04")), dest, url))
    assert not (dest / "conll04" / "conll04_dev.json").exists() and not list(dest.rglob("*.part"))


def test_every_shipped_config_has_a_source_for_each_split():
    assert sorted(SOURCES) == sorted(CONFIGS)
    for name in CONFIGS:
        config = load_config(resolve_config_path(name))
        assert set(sources_of(config)) == set(config.splits.values())
        assert all(s.url().startswith("https://raw.githubusercontent.com/") for s in sources_of(config).values())


@pytest.mark.skipif(not (data_root() / "conll04").exists(), reason=f"benchmark data root {data_root()} is missing")
def test_the_pinned_sizes_and_hashes_are_those_of_the_shared_copies():
    for files in SOURCES.values():
        for relative, source in files.items():
            if relative != TRIMMED:
                data = (data_root() / relative).read_bytes()
                assert (len(data), git_sha1(data)) == (source.size, source.git_sha1), relative


def test_a_missing_dataset_says_which_fetch_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match=r"get it with `python -m ie.datasets fetch semeval`"):
        load_split(load_config(resolve_config_path("semeval")), "train")
    assert datasets_cli.main(["stats", "nyt"]) == 1
    assert "python -m ie.datasets fetch nyt" in capsys.readouterr().err


def test_the_data_root_is_the_users_cache_unless_crossagentie_data_says_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    monkeypatch.setenv("CROSSAGENTIE_CACHE", str(tmp_path / "cache"))
    assert data_root() == tmp_path / "cache" / "data"
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "elsewhere"))
    assert data_root() == tmp_path / "elsewhere"
