"""Serve a base GGUF plus a student GGUF LoRA on this machine (CPU), until Ctrl-C.

    python -m serve.local --model qwen2.5-coder-0.5b --adapter runs/student/adapter.gguf [--port 8080] [--parallel 4]

Runs llama.cpp's OpenAI-compatible server embedded in this process (`ie.llm.local.LocalServer`) on loopback
and prints the base URL and the model name to pass to `python -m serve.client --endpoint URL --model NAME`.
The adapter applies to every request.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path


def wait_for_stop_signal() -> None:
    """Block until SIGINT (Ctrl-C) or SIGTERM."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m serve.local", description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--model", default=None, help="catalogue name (configs/models.yaml) or .gguf path; "
                                                 "default: the catalogue's default")
    p.add_argument("--adapter", type=Path, action="append", default=[], help="GGUF LoRA adapter; repeatable")
    p.add_argument("--port", type=int, default=0, help="loopback port (default: any free port)")
    p.add_argument("--parallel", type=int, default=4, help="requests served at once (server slots)")
    p.add_argument("--n-ctx", type=int, default=None, help="context per request (default: the catalogue's)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from ie.llm.local import LocalServer, ModelError

    try:
        server = LocalServer(args.model, n_parallel=args.parallel, n_ctx=args.n_ctx, lora=args.adapter, port=args.port)
        with server:
            print(f"serving {server.model_name} at {server.base_url} "
                  f"(adapters: {', '.join(map(str, server.lora)) or 'none'}); Ctrl-C stops", flush=True)
            print(f"  python -m serve.client --endpoint {server.base_url} --model {server.model_name} ...",
                  flush=True)
            wait_for_stop_signal()
    except (ModelError, ValueError) as exc:
        raise SystemExit(f"serve.local: {exc}") from None
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
