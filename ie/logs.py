"""How entry points log: the project's own INFO lines, and the libraries' (httpx, openai, ...) only at WARNING
unless `--verbose`, so a run shows its progress bar and summary, not one line per HTTP request."""
from __future__ import annotations

import argparse
import logging

# Loggers of libraries the pipeline calls; their INFO lines (one per request, per download) are noise to a user.
# (openai 2+ sends through httpx2/httpcore2, older releases through httpx/httpcore.)
LIBRARY_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "urllib3", "xllamacpp", "huggingface_hub",
                   "filelock", "datasets", "transformers", "asyncio")


def add_verbose_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", action="store_true",
                        help="also show the libraries' log lines (httpx requests, openai, llama.cpp server)")


def setup_logging(verbose: bool = False) -> None:
    """INFO lines on stderr; the library loggers' only from WARNING up unless `verbose`."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
