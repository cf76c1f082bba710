"""Dataset loaders: each source format becomes a list of `ie.schema.Record`, one per sentence.

`load_split(config, split)` loads a configured benchmark split, `load_slice` a slice of it; `load_input(path)`
loads a user file by its extension. Malformed input raises `ie.schema.RecordFormatError` naming the file, line
and field.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ie.config import ConfigError, DatasetConfig, data_root
from ie.datasets import conll, dygie, nyt, plaintext, records, semeval, spert
from ie.schema import Record

Loader = Callable[[Path, str], list[Record]]

# config `format` -> loader(path, id_prefix)
LOADERS: dict[str, Loader] = {
    "spert": spert.load,
    "conll": conll.load,
    "dygie": dygie.load,
    "nyt": nyt.load,
    "semeval": semeval.load,
    "records": records.load,
    "plaintext": plaintext.load,
}

INPUT_FORMATS = {".jsonl": "records", ".txt": "plaintext", ".json": "spert"}


def load_split(config: DatasetConfig, split: str) -> list[Record]:
    """The records of one split; ids are `{config.name}-{split}-{n}` (SemEval: the source id)."""
    loader = LOADERS.get(config.format)
    if loader is None:
        raise ConfigError(f"{config.source or config.name}: field 'format': unknown loader {config.format!r}; "
                          f"known: {sorted(LOADERS)}")
    path = config.split_path(split)
    if not path.exists():
        raise FileNotFoundError(f"{config.source or config.name}: split {split!r}: {path} not found; get it with "
                                f"`{fetch_command(config.name)}` (data root {data_root()}; $CROSSAGENTIE_DATA "
                                "moves it)")
    return loader(path, f"{config.name}-{split}")


def fetch_command(name: str) -> str:
    """The command that gets dataset `name` (`ie.datasets.fetch`): what an error about its missing files says."""
    return f"python -m ie.datasets fetch {name}"


def select(records: list[Record], offset: int = 0, limit: int | None = None) -> list[Record]:
    """Records `offset+1 .. offset+limit` (1-based): a fresh slice after the ones settings were chosen on."""
    return records[offset: offset + limit if limit else None]


def load_slice(config: DatasetConfig, split: str, offset: int = 0, limit: int | None = None) -> list[Record]:
    """`select` of a configured split: what the teacher, the bench and `export` run on."""
    return select(load_split(config, split), offset, limit)


def load_input(path: str | Path) -> list[Record]:
    """A user file by extension: `.jsonl` records, `.txt` one sentence a line, `.json` SpERT.
    Ids of `.txt`/`.json` inputs are `{file stem}-{n}`."""
    path = Path(path)
    fmt = INPUT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"{path}: unknown input extension {path.suffix!r}; expected one of {sorted(INPUT_FORMATS)}")
    if not path.exists():
        raise FileNotFoundError(f"{path}: input file not found")
    return LOADERS[fmt](path, path.stem)
