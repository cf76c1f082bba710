"""A fault-injecting OpenAI-compatible chat server on 127.0.0.1, for tests and for probing a client by hand.

Each POST is answered by `script(body)` (a `Reply`: an answer, an HTTP error whose text may echo the request's
key, a hang, a trickle, a body that is no chat completion, another model name), and the script can be swapped
mid-test (a server that is "fixed"). Hangs end when the server stops. Every fault is also a flag:

    python tests/fault_server.py --port 8099 --trickle-s 0.5       # one byte every 0.5 s
    python tests/fault_server.py --port 8099 --never-answer         # accepts, never answers
    python tests/fault_server.py --port 8099 --status 429 --retry-after 20 --times 2   # then valid answers
    python tests/fault_server.py --port 8099 --body html            # or: garbage, no-choices, empty-object
    python tests/fault_server.py --port 8099 --answer 'this is not json {'   # ignores response_format
    python tests/fault_server.py --port 8099 --model other-model --answer '{"entities": [], "k": "{key}"}'
"""
from __future__ import annotations

import argparse
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# 200 bodies that are no chat completion, by name (`Reply.body`, `--body`).
BODIES = {
    "garbage": ("text/plain", "\x00\x01 not a response at all"),
    "html": ("text/html", "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"),
    "no-choices": ("application/json", '{"id": "x", "object": "chat.completion", "model": "m", "choices": []}'),
    "empty-object": ("application/json", "{}"),
}


@dataclass(frozen=True)
class Reply:
    content: str = '{"entities": []}'  # the assistant message of a 200; "{key}" becomes the request's bearer token
    status: int = 200
    message: str = ""  # the error text of a non-200; "{key}" becomes the request's bearer token
    hang_s: float = 0.0  # wait this long (at most until the server stops) before answering; inf: never answer
    finish_reason: str = "stop"
    trickle_s: float = 0.0  # send the body one byte at a time, this long apart
    retry_after: str | None = None  # a Retry-After header
    body: str | None = None  # a name of BODIES: sent instead of a chat completion
    model: str | None = None  # the model name the answer gives (default: the one asked for)


Script = Callable[[dict], Reply]


def always(reply: Reply) -> Script:
    return lambda body: reply


def first(times: int, fault: Reply, then: Reply = Reply()) -> Script:
    """`fault` for the first `times` requests, `then` after them (a server that recovers)."""
    seen = iter(range(times))
    return lambda body: fault if next(seen, None) is not None else then


def sigterm_once_asked(command: list[str], server: FaultServer, requests: int) -> tuple[int, str]:
    """Run `command`, send it SIGTERM once `server` has had `requests` requests, and return its exit code and
    stderr: how a test stops a run mid-record as a scheduler would."""
    import signal
    import subprocess

    run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(server.requests) < requests and time.monotonic() < deadline:
        time.sleep(0.1)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=30)
    return run.returncode, err


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _payload(reply: Reply, body: dict, key: str) -> tuple[str, bytes]:
    """(content type, bytes) of the reply to request `body` sent with bearer token `key`."""
    if reply.body is not None:
        kind, text = BODIES[reply.body]
        return kind, text.encode()
    if reply.status != 200:
        payload: dict = {"error": {"message": reply.message.replace("{key}", key), "code": reply.status}}
    else:
        message = {"role": "assistant", "content": reply.content.replace("{key}", key)}
        payload = {"id": "x", "object": "chat.completion", "created": 0,
                   "model": reply.model or body.get("model", "m"),
                   "choices": [{"index": 0, "finish_reason": reply.finish_reason, "message": message}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    return "application/json", json.dumps(payload).encode()


class FaultServer:
    """`with FaultServer(script) as server:` serves on `server.url` (an OpenAI base URL); `server.requests`
    holds every request body, `server.times` when each arrived (monotonic), `server.script` may be reassigned."""

    def __init__(self, script: Script = always(Reply()), port: int = 0):
        self.script = script
        self.requests: list[dict] = []
        self.times: list[float] = []
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                server.times.append(time.monotonic())
                reply = server.script(body)
                wait = None if math.isinf(reply.hang_s) else reply.hang_s
                if reply.hang_s and (server._stopping.wait(wait) or wait is None):
                    return
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                kind, data = _payload(reply, body, key)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    if reply.retry_after is not None:
                        self.send_header("Retry-After", reply.retry_after)
                    self.end_headers()
                    self._write(data, reply.trickle_s)
                except OSError:  # the client gave up (a timeout test)
                    pass

            def _write(self, data: bytes, trickle_s: float) -> None:
                if not trickle_s:
                    self.wfile.write(data)
                    return
                for i in range(len(data)):
                    if server._stopping.wait(trickle_s):
                        return
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()

        return Handler

    def __enter__(self) -> FaultServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python tests/fault_server.py", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 2)[-1], allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=8099, help="loopback port to serve on")
    p.add_argument("--answer", default=Reply.content, help="the assistant message of a 200 answer ('{key}' "
                   "echoes the key)")
    p.add_argument("--status", type=int, default=200, help="HTTP status of every answer")
    p.add_argument("--message", default="fault", help="error text of a non-200 ('{key}' echoes the key)")
    p.add_argument("--hang-s", type=float, default=0.0, help="wait this long before answering")
    p.add_argument("--never-answer", action="store_true", help="accept every request and never answer")
    p.add_argument("--trickle-s", type=float, default=0.0, help="send the body one byte every this many seconds")
    p.add_argument("--retry-after", default=None, help="a Retry-After header (seconds)")
    p.add_argument("--body", choices=sorted(BODIES), default=None, help="a 200 body that is no chat completion")
    p.add_argument("--model", default=None, help="the model name answers give (default: the one asked for)")
    p.add_argument("--finish-reason", default="stop", help="finish_reason of a 200 answer (length: cut off)")
    p.add_argument("--times", type=int, default=None, help="the fault for the first N requests, then valid answers")
    return p


def reply_of(args: argparse.Namespace) -> Reply:
    """The fault the flags describe."""
    return Reply(content=args.answer, status=args.status,
                 message=args.message, hang_s=math.inf if args.never_answer else args.hang_s,
                 finish_reason=args.finish_reason, trickle_s=args.trickle_s, retry_after=args.retry_after,
                 body=args.body, model=args.model)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    fault = reply_of(args)
    script = always(fault) if args.times is None else first(args.times, fault)
    with FaultServer(script, port=args.port) as server:
        print(f"fault server on {server.url}: {fault}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
