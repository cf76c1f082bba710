"""Check that an LLM endpoint answers a structured request: prints the answer, latency and token usage.

    python -m ie.llm check                                   # embedded server, catalogue default model
    python -m ie.llm check --model smollm2-135m              # or a catalogue name / path to a .gguf
    python -m ie.llm check --endpoint https://api.openai.com/v1 --model-name gpt-4o-mini --api-key-env OPENAI_API_KEY

API keys are read from the named environment variable only and are never printed.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ie.llm.client import Endpoint
    from ie.llm.types import Completion

QUESTION = "Which city is the capital of France, and which country is it in? Answer in JSON."


class CapitalAnswer(BaseModel):
    city: str = Field(description="the capital city")
    country: str = Field(description="the country it is the capital of")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ie.llm", description=__doc__.split("\n")[0], allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="send one structured request and print answer, latency and usage",
                           allow_abbrev=False)
    where = check.add_mutually_exclusive_group()
    where.add_argument("--model", help="catalogue name (configs/models.yaml) or .gguf path for the embedded server")
    where.add_argument("--endpoint", help="base URL of an OpenAI-compatible server (e.g. http://host:8000/v1)")
    check.add_argument("--model-name", help="model name at --endpoint (required with --endpoint)")
    check.add_argument("--api-key-env", help="environment variable that holds the endpoint's API key")
    check.add_argument("--max-tokens", type=int, default=64, help="answer length limit of the check's one call")
    check.add_argument("--threads", type=int, help="CPU threads for the embedded server (default: all cores)")
    return parser


async def _ask(endpoint: Endpoint, max_tokens: int) -> tuple[Completion[CapitalAnswer], dict[str, int]]:
    from ie.llm.client import LLMClient
    from ie.llm.types import SamplingParams

    client = LLMClient.from_endpoints([endpoint], max_retries=1)
    try:
        params = SamplingParams(max_tokens=max_tokens, logprobs=True)
        [completion] = await client.structured([{"role": "user", "content": QUESTION}], CapitalAnswer, params)
    finally:
        await client.aclose()
    return completion, client.usage.as_dict()


def check(args: argparse.Namespace) -> int:
    from ie.llm.local import ensure_endpoint

    server_kwargs = {} if args.endpoint else {"threads": args.threads}
    model = args.model_name if args.endpoint else args.model
    with ensure_endpoint(model, args.endpoint, api_key_env=args.api_key_env, **server_kwargs) as endpoint:
        print(f"endpoint: {endpoint.url}  model: {endpoint.model}")
        completion, usage = asyncio.run(_ask(endpoint, args.max_tokens))
    if completion.value is not None:
        print(f"answer:   {completion.value.model_dump_json()}")
    else:
        print(f"answer:   {completion.raw!r}\nerror:    {completion.error}")
    logprob = "n/a" if completion.logprob is None else f"{completion.logprob:.3f}"
    print(f"latency:  {completion.latency_s:.2f}s  attempts: {completion.attempts}  mean logprob: {logprob}")
    print(f"usage:    {json.dumps(usage)}")
    return 0 if completion.ok else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.endpoint and not args.model_name:
        build_parser().error("--endpoint needs --model-name")
    if args.model_name and not args.endpoint:
        build_parser().error("--model-name goes with --endpoint; use --model for the embedded server")
    from ie.llm.local import ModelError
    from ie.llm.types import RunStopped, TransportError

    try:
        return check(args)
    except TransportError as exc:
        print(f"error: no answer ({exc.reason}): {exc}", file=sys.stderr)
        return 1
    except RunStopped as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (ModelError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
