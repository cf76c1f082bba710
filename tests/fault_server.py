"""A fault-injecting OpenAI-compatible chat server on 127.0.0.1 for tests: each POST is answered by
`script(body)` (a `Reply`: an answer, an HTTP error whose text may echo the request's key, or a hang), and the
script can be swapped mid-test (a server that is "fixed"). Hangs end when the server stops."""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    content: str = '{"entities": []}'  # the assistant message of a 200
    status: int = 200
    message: str = ""  # the error text of a non-200; "{key}" becomes the request's bearer token
    hang_s: float = 0.0  # wait this long (at most until the server stops) before answering
    finish_reason: str = "stop"


Script = Callable[[dict], Reply]


def always(reply: Reply) -> Script:
    return lambda body: reply


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FaultServer:
    """`with FaultServer(script) as server:` serves on `server.url` (an OpenAI base URL); `server.requests`
    holds every request body, `server.script` may be reassigned."""

    def __init__(self, script: Script = always(Reply()), port: int = 0):
        self.script = script
        self.requests: list[dict] = []
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
                reply = server.script(body)
                if reply.hang_s and server._stopping.wait(reply.hang_s):
                    return
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if reply.status != 200:
                    payload = {"error": {"message": reply.message.replace("{key}", key), "code": reply.status}}
                else:
                    payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                               "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                            "message": {"role": "assistant", "content": reply.content}}],
                               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

        return Handler

    def __enter__(self) -> FaultServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
