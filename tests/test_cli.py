"""`ie.cli`: flags typed from a settings dataclass's annotations, and settings from a config section and flags."""
import argparse
import dataclasses

import pytest

from ie.cli import add_flags, from_sources, opt
from ie.config import ConfigError
from teacher.config import TeacherConfig


@dataclasses.dataclass
class Toy:
    dry: bool = opt(False, "a switch")
    cache: bool = opt(True, "on unless --no-cache")
    limit: int | None = opt(None, "a number or nothing")
    sizes: list[int] = opt([1], "numbers")
    note: str = opt("x", "text")


def test_flags_are_typed_from_the_annotation():
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_flags(parser, Toy)
    given = vars(parser.parse_args(["--dry", "--no-cache", "--limit", "3", "--sizes", "2, 3", "--sizes", "4"]))
    assert given == {"dry": True, "cache": False, "limit": 3, "sizes": [2, 3, 4], "note": None}
    assert vars(parser.parse_args([])) == dict.fromkeys(given)
    with pytest.raises(SystemExit):
        parser.parse_args(["--sizes", "1,x"])
    assert "(default 1)" in parser.format_help() and Toy().sizes is not Toy().sizes


def test_from_sources_keeps_reserved_keys_out_and_names_the_file_in_errors():
    assert from_sources(Toy, "toy", {"limit": 2, "prices": {}}, {"limit": None, "verbose": True}, "t.yaml",
                        reserved=("prices",)) == Toy(limit=2)
    with pytest.raises(ConfigError, match=r"^t.yaml: toy.prices: unknown setting; known: \['cache', 'dry', "):
        from_sources(Toy, "toy", {"prices": {}}, {}, "t.yaml")
    with pytest.raises(ConfigError, match=r"^t.yaml: teacher.concurrency: must be at least 1, got 0$"):
        from_sources(TeacherConfig, "teacher", {"concurrency": 0}, {}, "t.yaml")
