"""Is speculative decoding faster end to end on this machine, with the same answers? (issue 36, part 5)

    PYTHONPATH=. python scripts/speculation_probe.py --model qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b \
        [--config conll04 --split dev --limit 20 --method direct --concurrency 1,2 --max-tokens 8]

For each concurrency it labels the same sentences once a mode, on a fresh embedded server, with no call cache:
plain decoding, drafts from `--draft` (a model with the same tokenizer), and n-gram lookup from the context.
Prints a markdown row per run: wall seconds, completion tokens, and how many records' entities and relations
differ from plain decoding's at that concurrency and at the first concurrency (temperature 0, so a faithful
speculation changes none). `--modes` picks which of plain, draft and n-gram run (plain always runs first).
Run it alone: another process on the cores makes every wall time meaningless.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import crossagentie
from ie.config import load_config, resolve_config_path
from ie.datasets import load_slice
from ie.llm.local import LocalServer, Speculation
from ie.schema import Record


def _labels(record: Record) -> tuple:
    return (tuple((e.start, e.end, e.type) for e in record.entities),
            tuple((r.head, r.tail, r.type) for r in record.relations))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--draft", default="qwen2.5-coder-0.5b")
    p.add_argument("--config", default="conll04")
    p.add_argument("--split", default="dev")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--method", default="direct")
    p.add_argument("--concurrency", default="1,2", help="comma-separated")
    p.add_argument("--max-tokens", type=int, default=8, help="longest draft checked at once")
    p.add_argument("--modes", default="plain,draft,n-gram", help="comma-separated: plain, draft, n-gram")
    args = p.parse_args(argv)
    chosen = set(args.modes.split(",")) | {"plain"}
    if chosen - {"plain", "draft", "n-gram"}:
        p.error(f"--modes: choose from plain, draft, n-gram; got {args.modes}")
    config = load_config(resolve_config_path(args.config))
    records = load_slice(config, args.split, args.offset, args.limit)
    modes = {"plain": None, f"draft {args.draft}": Speculation(args.draft, args.max_tokens),
             "n-gram": Speculation(None, args.max_tokens)}
    modes = {name: speculation for name, speculation in modes.items() if name.split()[0] in chosen}
    print("| concurrency | decoding | wall s | completion tokens | records changed | changed from the first plain |\n"
          "|---|---|---|---|---|---|")
    first_plain: list[tuple] = []
    for concurrency in map(int, args.concurrency.split(",")):
        plain: list[tuple] = []
        for mode, speculation in modes.items():
            with LocalServer(args.model, n_parallel=concurrency, speculation=speculation) as server:
                start = time.monotonic()
                # the first answer's timeout runs from start(): a long one at concurrency 1 takes over 30 s
                out = crossagentie.extract_batch(
                    [Record(id=r.id, text=r.text) for r in records], schema=config, method=args.method,
                    endpoint=server.base_url, model_name=server.model_name, structured_output="llguidance",
                    concurrency=concurrency, timeout_first_answer_s=600)
                wall = time.monotonic() - start
            labels = [_labels(r) for r in out]
            plain = plain or labels
            first_plain = first_plain or labels
            changed = sum(a != b for a, b in zip(labels, plain))
            changed_first = sum(a != b for a, b in zip(labels, first_plain))
            tokens = sum(r.stats.completion_tokens for r in out)
            print(f"| {concurrency} | {mode} | {wall:.1f} | {tokens} | {changed} of {len(out)} | {changed_first} of "
                  f"{len(out)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
