"""Fetch, export or count a configured dataset.

    python -m ie.datasets fetch conll04 [--dest DIR]      # into the data root (see ie.config.data_root)
    python -m ie.datasets export conll04 --split test [--limit 50] --out runs/conll04_test.jsonl
    python -m ie.datasets stats conll04 [--split test]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ie.config import ConfigError, data_root, load_config, resolve_config_path
from ie.datasets import load_slice, load_split
from ie.datasets.fetch import GITHUB_RAW, FetchError, fetch
from ie.datasets.stats import format_stats, split_stats
from ie.schema import RecordFormatError, write_records


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ie.datasets", description=__doc__.splitlines()[0],
                                     allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download a dataset's split files and check their sizes and hashes",
                                allow_abbrev=False)
    fetch.add_argument("name", help="config name (conll04, conll2003, scierc, nyt, semeval) or path")
    fetch.add_argument("--dest", type=Path, help="data root to fill (default: $CROSSAGENTIE_DATA, else "
                       "~/.cache/crossagentie/data); point $CROSSAGENTIE_DATA at it to read it from elsewhere")
    fetch.add_argument("--mirror", default=GITHUB_RAW, help="a server laid out like raw.githubusercontent.com")
    export = commands.add_parser("export", help="write one split as record JSONL", allow_abbrev=False)
    export.add_argument("name", help="config name (conll04) or path (configs/conll04.yaml)")
    export.add_argument("--split", required=True, help="the split to write (a key of the config's splits: section)")
    export.add_argument("--limit", type=int, help="only the first N records (the records `--limit N` runs on)")
    export.add_argument("--offset", type=int, default=0, help="skip the first N records (as `--offset N` does)")
    export.add_argument("--out", required=True, help="output .jsonl file")
    stats = commands.add_parser("stats", help="print counts per split and per type", allow_abbrev=False)
    stats.add_argument("name", help="config name (conll04) or path (configs/conll04.yaml)")
    stats.add_argument("--split", help="one split (default: every split in the config)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(resolve_config_path(args.name))
        if args.command == "fetch":
            for path, how in fetch(config, args.dest or data_root(), args.mirror):
                print(f"{how}: {path}")
            return 0
        if args.command == "export":
            n = write_records(args.out, load_slice(config, args.split, args.offset, args.limit))
            print(f"wrote {n} records of {config.name} {args.split} to {args.out}")
            return 0
        for split in [args.split] if args.split else list(config.splits):
            print(format_stats(f"{config.name} {split}", split_stats(load_split(config, split))))
        return 0
    except (ConfigError, RecordFormatError, FileNotFoundError, KeyError, FetchError) as exc:
        print(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
