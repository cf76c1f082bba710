"""Getting the benchmark data: `python -m ie.datasets fetch NAME [--dest DIR]` downloads the files a shipped
config's splits name from the public snapshot its `PROVENANCE.md` names (a GitHub repository, pinned by commit),
checks each file's size and git blob hash, and lays it out under the data root as the loaders read it.

The sources are the byte-identical files the loaders and these hashes were checked on. Hugging Face hosts
converted copies of some of them (CoNLL-2003 without its `-DOCSTART-` documents, SemEval-2010 without its ids and
comments), which the loaders do not read and the hashes would not match, so none is taken from there.
"""
from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from ie.config import DatasetConfig

log = logging.getLogger("ie.datasets")
GITHUB_RAW = "https://raw.githubusercontent.com"
CHUNK = 1 << 16


@dataclass(frozen=True)
class Snapshot:
    """A public repository at one commit, and the folder in it that holds the files."""
    repo: str
    commit: str
    folder: str


@dataclass(frozen=True)
class SourceFile:
    """One file of a dataset: where it lies in its snapshot, and its size and git blob sha1 (`git hash-object`)."""
    snapshot: Snapshot
    name: str  # path under the snapshot's folder
    size: int
    git_sha1: str

    def url(self, mirror: str = GITHUB_RAW) -> str:
        s = self.snapshot
        return f"{mirror.rstrip('/')}/{s.repo}/{s.commit}/{s.folder}/{self.name}"


TABLERT = Snapshot("YoumiMa/TablERT", "4eab904878edd5a12dd9dbac021b1f958461dfe2", "data/datasets/conll04")
NER_DATASETS = Snapshot("davidsbatista/NER-datasets", "ab2e8178d7eb33f45f3f4c94dd0904115a38a549", "CONLL2003")
TANL = Snapshot("JerryHao2001/thesis-tanl", "c1ee14be86f986a5cb48a4d5df8cf590362ce487", "data/scierc_joint_er")
ONEREL = Snapshot("China-ChallengeHub/OneRel", "2e47d5043f776ec57c72b23ab56711cf91064e97", "data/NYT")
SEMEVAL = Snapshot("roomylee/rcnn-text-classification", "e8c56295581a4150f77c6a589548d7bc66c52f99",
                   "SemEval2010_task8_all_data")

# config name -> {a split's path under the data root (the config's `splits:`): its source file}
SOURCES: dict[str, dict[str, SourceFile]] = {
    "conll04": {
        "conll04/conll04_train.json": SourceFile(TABLERT, "conll04_train.json", 474194,
                                                 "d91264b330f85196f4841eae37f3ec1bc5cff46d"),
        "conll04/conll04_dev.json": SourceFile(TABLERT, "conll04_dev.json", 124823,
                                               "d85d80238c6d62d1f27af8f381415f4fd7ab7765"),
        "conll04/conll04_test.json": SourceFile(TABLERT, "conll04_test.json", 151092,
                                                "1e0d626fef87b1a29394956c039662c4d5534209"),
    },
    "conll2003": {
        "conll2003/train.txt": SourceFile(NER_DATASETS, "train.txt", 3283418,
                                          "45294b2bbb51e834b7810791be12f2c41ab7f6b7"),
        "conll2003/valid.txt": SourceFile(NER_DATASETS, "valid.txt", 827441,
                                          "977ade69c23ea8fc673abca79bfe13ca902acd8b"),
        "conll2003/test.txt": SourceFile(NER_DATASETS, "test.txt", 748093,
                                         "d1cee8ac51dc4c20b4f80a8ab0b165c966e896e9"),
    },
    "scierc": {
        "scierc/scierc_joint_er_train.json": SourceFile(TANL, "scierc_joint_er_train.json", 1002473,
                                                        "d2ff4c03ddfe1699cb8d56c6530fb131bc80f3a3"),
        "scierc/scierc_joint_er_dev.json": SourceFile(TANL, "scierc_joint_er_dev.json", 144713,
                                                      "219e0c43895336306ed55810af3dc2a5b785c45a"),
    },
    "nyt": {
        "nyt/dev_triples.json": SourceFile(ONEREL, "dev_triples.json", 2437249,
                                           "d9e0a399000ea67c22ca7b99f3ffe85e7ed5db28"),
    },
    "semeval": {
        "semeval2010_task8/SemEval2010_task8_all_data/SemEval2010_task8_training/TRAIN_FILE.TXT": SourceFile(
            SEMEVAL, "SemEval2010_task8_training/TRAIN_FILE.TXT", 1365759, "138941ab7fd6d955b3c94ea6c4c8fdf591fb7994"),
        "semeval2010_task8/SemEval2010_task8_all_data/SemEval2010_task8_testing_keys/TEST_FILE_FULL.TXT": SourceFile(
            SEMEVAL, "SemEval2010_task8_testing_keys/TEST_FILE_FULL.TXT", 463020,
            "7a27b35b298f57dcc801626fedf745f955c8f341"),
    },
}


class FetchError(RuntimeError):
    """A file that could not be fetched, or whose size or hash is not the pinned one: names the file and why."""


def git_sha1(data: bytes) -> str:
    """The git blob sha1 of `data`, as `git hash-object` prints it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sources_of(config: DatasetConfig) -> dict[str, SourceFile]:
    """The source of each split file of a shipped config; a config with no known source is refused by name."""
    known = SOURCES.get(config.name)
    missing = [path for path in config.splits.values() if path not in (known or {})]
    if known is None or missing:
        raise FetchError(f"{config.source or config.name}: no public source known for "
                         f"{missing[0] if known else 'its data'}; fetch knows {sorted(SOURCES)}")
    return {path: known[path] for path in config.splits.values()}


def checked(url: str, source: SourceFile, data: bytes) -> bytes:
    """`data`, downloaded from `url`, when it has the size and hash `source` pins; else FetchError naming both."""
    if len(data) != source.size:
        raise FetchError(f"{url}: {len(data)}{'+' if len(data) > source.size else ''} bytes, expected {source.size}")
    found = git_sha1(data)
    if found != source.git_sha1:
        raise FetchError(f"{url}: git blob sha1 {found}, expected {source.git_sha1}")
    return data


def _download(client: httpx.Client, url: str, limit: int) -> bytes:
    """The body at `url`, read up to one byte past `limit` (a larger file is wrong whatever it holds)."""
    with client.stream("GET", url) as response:
        if response.status_code != 200:
            raise FetchError(f"{url}: HTTP {response.status_code}")
        body = bytearray()
        for chunk in response.iter_bytes(CHUNK):
            body += chunk
            if len(body) > limit:
                break
        return bytes(body)


def fetch(config: DatasetConfig, dest: Path, mirror: str = GITHUB_RAW, timeout_s: float = 60.0
          ) -> Iterator[tuple[Path, str]]:
    """Download the config's split files under `dest`, yielding (path, "fetched" or "present") per file. A file
    already there with the pinned size and hash is kept; a new one is written whole (a `.part` file renamed) only
    once checked. `mirror`: a server laid out like raw.githubusercontent.com."""
    with httpx.Client(timeout=timeout_s, follow_redirects=True) as client:
        for relative, source in sources_of(config).items():
            path = dest / relative
            if path.is_file() and path.stat().st_size == source.size and git_sha1(path.read_bytes()) == source.git_sha1:
                yield path, "present"  # size first: a git_sha1 of a large wrong file is never computed
                continue
            url = source.url(mirror)
            log.info("fetching %s", url)
            try:
                data = checked(url, source, _download(client, url, source.size))
            except httpx.HTTPError as exc:
                raise FetchError(f"{url}: {type(exc).__name__}: {exc}") from None
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + ".part")
            part.write_bytes(data)
            os.replace(part, path)
            yield path, "fetched"
