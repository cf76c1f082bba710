"""One way from a settings dataclass to a command line: defaults, then the dataset config's section, then flags.

A setting is a dataclass field made with `opt(default, help)`. `add_flags` gives each its `--flag` (underscores
as dashes) typed from the annotation, with its help and default; `from_sources` builds the dataclass from the
config file's section (`teacher:`, `distill:`, `bench:`) and the flags given, refusing a section key that is no
setting with the file and the key. train_student.py and student.openai_ft stay on TRL's `TrlParser` (YAML via
--config, then dataclass flags), the ecosystem's own parser for the `SFTConfig` they build on.
`sigterm_as_interrupt` makes a SIGTERM (a scheduler's, `timeout`'s, `docker stop`'s) end a run as Ctrl-C does.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import sys
import types
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ie.config import ConfigError

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt, so that the run stops the same way."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block a SIGTERM raises `Terminated`; the previous handler is back after it."""
    def stop(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def report_stop(exc: KeyboardInterrupt, kept: str, command: str) -> int:
    """A stopped run's one line on stderr (what it kept, the command that resumes it) and its exit code: 128 + the
    signal, as a shell reports it."""
    word, code = ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
    print(f"{word}: {kept}; to resume, run again: {command}", file=sys.stderr)
    return code


def opt(default: Any, help: str) -> Any:
    """A setting's field: its default (a list is copied for each instance) and the help text of its flag."""
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


def _kind(hint: Any) -> tuple[Any, bool]:
    """`int | None` -> (int, False); `list[Path]` -> (Path, True): a flag's value type, and whether it is a list."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is list:
        return typing.get_args(hint)[0], True
    return hint, False


def _comma_list(kind: Callable[[str], Any]) -> Callable[[str], list]:
    def parse(text: str) -> list:
        try:
            return [kind(v.strip()) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__} values, got {text!r}") from None
    return parse


def add_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """One `--flag` per setting of dataclass `cls`, default None (a flag not given leaves the section's value):
    a bool that defaults to False is a switch, one that defaults to True also gets `--no-flag`; a list is given
    comma-separated, or repeated."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind, many = _kind(hints[f.name])
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        shown = (",".join(map(str, default)) or "none") if many else default
        flag, help_text = "--" + f.name.replace("_", "-"), f"{f.metadata['help']} (default {shown})"
        if kind is bool:
            action = argparse.BooleanOptionalAction if default else "store_true"
            parser.add_argument(flag, action=action, default=None, help=help_text)
        elif many:
            parser.add_argument(flag, type=_comma_list(kind), action="extend", default=None, help=help_text)
        else:
            parser.add_argument(flag, type=kind, default=None, help=help_text)


def from_sources(cls: type[T], section: str, values: Mapping[str, Any], flags: Mapping[str, Any],
                 source: str | Path = "<config>", reserved: Collection[str] = ()) -> T:
    """`cls` from its defaults, then `values` (the `section:` mapping of config file `source`; its `reserved` keys
    are read elsewhere), then the `flags` given (None = not given; names that are no setting are left out).
    A key that is no setting, and any error the settings raise, name the file."""
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - known - set(reserved))
    if unknown:
        raise ConfigError(f"{source}: {section}.{unknown[0]}: unknown setting; known: {sorted(known | set(reserved))}")
    merged = {k: v for k, v in values.items() if k in known}
    merged.update({k: v for k, v in flags.items() if k in known and v is not None})
    try:
        return cls(**merged)
    except ConfigError as exc:
        raise type(exc)(f"{source}: {exc}") from None
    except TypeError as exc:  # a YAML value of the wrong type, met in a comparison
        raise ConfigError(f"{source}: {section}: {exc}") from None
