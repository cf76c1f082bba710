"""Does a router rank a schema's types, and what does it cost? Only the routing step, on a slice with gold.

    PYTHONPATH=. python scripts/route_probe.py --config semeval --split train --offset 50 --limit 20 \
        --routers likelihood:3,menu:3 [--model qwen2.5-coder-1.5b --concurrency 2]

For each `ROUTE_BY:TOP_K`, on one embedded server (no call cache), it routes every record of the slice as
`crossagentie` would and prints a markdown row per kind: how many of each sentence's gold types are among the
router's 1, 2 and 4 best-scored (against k types drawn at random), how many its top k kept, and the router's calls
and new tokens a sentence (prompt tokens the prefix cache did not reuse, plus completion tokens). Routing is a
few one-token calls a sentence, so a probe costs minutes where a full `crossagentie` run costs an hour.
Run it alone: another process on the cores makes every wall time meaningless.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence

from ie.config import load_config, resolve_config_path
from ie.datasets import load_slice
from ie.llm.types import Usage
from ie.records import LabelledRecord
from teacher.config import TeacherConfig
from teacher.context import RecordContext
from teacher.labeller import open_labeller
from teacher.routing import check_router, gold_types_kept, gold_types_ranked, route

KINDS = ("entity_types", "relation_types")


async def probe(config: str, split: str, offset: int, limit: int, model: str, concurrency: int,
                routers: Sequence[tuple[str, int]]) -> list[str]:
    dataset = load_config(resolve_config_path(config))
    schema, gold = dataset.task_schema, load_slice(dataset, split, offset, limit)
    rows = ["| router | kind | sentences | gold types | top 1 / 2 / 4 (at random) | kept by top k | router calls "
            "/ new tok a sentence | wall s |", "|---|---|---|---|---|---|---|---|"]
    async with open_labeller(TeacherConfig(model=model, concurrency=concurrency)) as labeller:
        for route_by, top_k in routers:
            cfg = TeacherConfig(model=model, concurrency=concurrency, routing="on", route_by=route_by,
                                route_top_k=top_k)
            check_router("crossagentie", schema, cfg)
            gate, usage, started = asyncio.Semaphore(concurrency), Usage(), time.perf_counter()

            async def routed(record, cfg=cfg, gate=gate, usage=usage):
                async with gate:
                    ctx = RecordContext(record.unlabelled(), schema, labeller.client, cfg, "crossagentie")
                    await route(ctx)
                usage.add(ctx.usage)
                return LabelledRecord(id=record.id, text=record.text, debate=ctx.transcript)

            predictions = await asyncio.gather(*(routed(r) for r in gold))
            wall = time.perf_counter() - started
            ranked, kept = gold_types_ranked(gold, predictions, schema), gold_types_kept(gold, predictions)
            new = usage.new_tokens / len(gold)
            for kind in KINDS:
                r, top, chance = ranked[kind], ranked[kind]["top"], ranked[kind]["chance"]
                rows.append(f"| {route_by}:{top_k} | {kind} | {r['records']} | {r['gold']} | "
                            f"{' / '.join(str(top[k]) for k in top)} ({' / '.join(str(chance[k]) for k in chance)}) | "
                            f"{kept[kind]['kept']} of {kept[kind]['gold']} | "
                            f"{usage.calls / len(gold):.1f} / {new:.0f} | {wall:.0f} |")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="semeval")
    p.add_argument("--split", default="train")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--routers", default="likelihood:3,menu:3", help="ROUTE_BY:TOP_K, comma-separated")
    args = p.parse_args(argv)
    routers = [(name, int(k)) for name, k in (item.split(":") for item in args.routers.split(","))]
    rows = asyncio.run(probe(args.config, args.split, args.offset, args.limit, args.model, args.concurrency, routers))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
