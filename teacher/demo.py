"""The demo (`make demo`): the full debate labels the example texts shipped in `configs/examples/` (a few
domains, each with its own schema and hand-made gold), prints what it found and where each run's viewer is.

    python -m teacher.demo [--out runs/demo] [--model M | --endpoint URL --model-name M]

Without --endpoint it runs the embedded llama.cpp server with the catalogue's default model, on CPU. A re-run
with the same settings repeats no LLM call (each run folder caches its calls).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ie.config import CONFIGS_DIR
from ie.schema import Record

EXAMPLES = CONFIGS_DIR / "examples"
TEXT_CHARS = 48


def domains() -> list[tuple[Path, Path]]:
    """(schema config, texts) of each example domain: `<name>.yaml` beside `<name>.jsonl`."""
    return [(config, config.with_suffix(".jsonl")) for config in sorted(EXAMPLES.glob("*.yaml"))]


def found_rows(domain: str, records: Sequence[Record]) -> list[str]:
    """One line a record: its domain, the start of its text, each mention as Type:text and each relation (pure)."""
    rows = []
    for r in sorted(records, key=lambda r: r.id):
        text = r.text if len(r.text) <= TEXT_CHARS else r.text[:TEXT_CHARS - 1] + "…"
        found = [f"{e.type}:{e.text}" for e in r.entities]
        found += [f"{h.text} -{t}-> {tl.text}" for h, t, tl in r.triples()]
        rows.append(f"{domain:<9} {text:<{TEXT_CHARS}}  {'; '.join(found) or '(nothing)'}")
    return rows


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m teacher.demo", description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/demo", help="folder of the runs, one subfolder a domain")
    parser.add_argument("--model", help="embedded model: catalogue name or GGUF path (default: the catalogue's)")
    parser.add_argument("--endpoint", help="OpenAI-compatible base URL instead of the embedded server")
    parser.add_argument("--model-name", help="model name at --endpoint")
    return parser


def main(argv: list[str] | None = None) -> int:
    from ie.config import ConfigError
    from ie.failures import IncompleteRun
    from ie.llm.local import load_catalogue
    from ie.schema import read_records
    from ie.scoring import Scores
    from ie.viewer import PAGE
    from teacher.config import TeacherConfig
    from teacher.runner import PREDICTIONS, run

    args = build_parser().parse_args(argv)
    where = f"at {args.endpoint}" if args.endpoint else "embedded llama.cpp, CPU"
    print(f"model: {args.model_name if args.endpoint else args.model or load_catalogue().default} ({where})")
    rows, f1s, viewers = [], [], []
    try:
        for config, texts in domains():
            cfg = TeacherConfig(config=str(config), input=str(texts), method="crossagentie",
                                out=str(Path(args.out) / config.stem), model=args.model, endpoint=args.endpoint,
                                model_name=args.model_name)
            print(f"labelling {texts.name} ({config.stem} schema) into {cfg.out_dir}", flush=True)
            out = run(cfg)
            rows += found_rows(config.stem, read_records(out / PREDICTIONS))
            scores = Scores.model_validate_json((out / "metrics.json").read_text(encoding="utf-8"))
            f1s.append(f"{config.stem} NER {100 * scores.ner.micro.f1:.0f}, RE {100 * scores.re.micro.f1:.0f}")
            viewers.append(out / PAGE)
    except IncompleteRun as exc:
        print(f"error: {exc.summary('python -m teacher.demo ' + ' '.join(argv or sys.argv[1:]))}", file=sys.stderr)
        return 1
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(["", f"{'domain':<9} {'text':<{TEXT_CHARS}}  found", *rows, ""]))
    print(f"F1 against the examples' gold: {'; '.join(f1s)}")
    print("\n".join(f"viewer: {path.resolve()}" for path in viewers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
