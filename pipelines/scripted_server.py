"""A real OpenAI-compatible HTTP server with scripted replies, for tests and benchmarks.

It speaks enough of the API (`POST /v1/chat/completions`, `POST /v1/completions`, `GET
/v1/models`, extra POST routes via `route`; replies may carry log-probs) for the real
`openai` client, so tests exercise the real HTTP path: retries, timeouts, parsing, keep-alive.
Stdlib only, bound to 127.0.0.1 on an ephemeral port, one daemon thread per connection.

    with ScriptedServer() as server:
        server.queue(Reply(status=429, headers={"Retry-After": "0"}), Reply("hello"))
        server.script(lambda body, n: Reply(f"answer {n}"))   # used once the queue is empty
        ... LLMClient pointed at server.base_url ...
        server.count["/v1/chat/completions"], server.requests, server.max_in_flight
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"  # legacy completions: prompt as text or token ids


_UNSET: Any = object()


@dataclass
class Reply:
    """One scripted answer. For broken servers: `raw` (bytes) replaces the whole body; `content`
    may be any JSON value (a list, a number); `message` replaces the whole message object (e.g.
    a bare string); `usage` may hold any numbers (negative ones); `drip_s` sends the body one
    byte at a time with that pause between bytes (a server that never quite times out)."""

    content: Any = None
    status: int = 200
    delay_s: float = 0.0
    raw: bytes | None = None
    finish_reason: str = "stop"
    usage: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    refusal: str | None = None
    message: Any = _UNSET
    drip_s: float = 0.0
    # per-choice log-probs as the API returns them (chat: {"content": [...]}; completions:
    # {"tokens", "token_logprobs", "top_logprobs"}); `choices` replaces the choice list (n > 1)
    logprobs: Any = None
    choices: list[dict[str, Any]] | None = None


Handler = Callable[[dict[str, Any], int], "Reply | str"]


def default_handler(body: dict[str, Any], n: int) -> Reply:
    return Reply("ok")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default backlog of 5 drops SYNs under benchmark concurrency
    scripted: ScriptedServer


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every reply carries Content-Length
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self.server.scripted._handle(self, "GET", None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.scripted._handle(self, "POST", self.rfile.read(length))

    def send_body(
        self, status: int, body: bytes, headers: dict[str, str], drip_s: float = 0.0
    ) -> None:
        try:
            self.send_response(status)
            lowered = {k.lower() for k in headers}
            if "content-type" not in lowered:
                self.send_header("Content-Type", "application/json")
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if drip_s <= 0:
                self.wfile.write(body)
                return
            self.wfile.flush()
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                if self.server.scripted._stopping.wait(drip_s):
                    self.close_connection = True
                    return
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout); nothing to do


class ScriptedServer:
    def __init__(self, handler: Handler | None = None, latency_s: float = 0.0):
        self.latency_s = latency_s  # added to every request, for fixed-latency benchmarks
        self._handler: Handler = handler or default_handler
        self._queue: deque[Reply | str] = deque()
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self.count: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self._n = 0
        self.errors: list[Exception] = []  # exceptions raised by the scripted handler
        self._stopping = threading.Event()
        self._routes: dict[str, Callable[[dict[str, Any]], tuple[int, Any]]] = {}
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- scripting -------------------------------------------------------------------------
    def script(self, handler: Handler) -> None:
        self._handler = handler

    def route(self, path: str, handler: Callable[[dict[str, Any]], tuple[int, Any]]) -> None:
        """An extra POST route (e.g. a weight-reload endpoint): body -> (status, JSON value)."""
        self._routes[path] = handler

    def queue(self, *replies: Reply | str) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_count(self) -> int:
        return self.count[CHAT_PATH]

    # ---- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedServer:
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _RequestHandler)
        self._httpd.scripted = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- request handling (runs in the connection's thread) --------------------------------
    def _handle(self, req: _RequestHandler, method: str, raw_body: bytes | None) -> None:
        path = req.path.split("?", 1)[0]
        with self._lock:
            self.count[path] += 1
        if method == "GET" and path == "/v1/models":
            body = {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
            return req.send_body(200, json.dumps(body).encode(), {})
        if method == "POST" and path in self._routes:
            try:
                status, answer = self._routes[path](json.loads(raw_body or b"{}"))
            except Exception as e:  # a broken route: answer 500, keep it for the test
                self.errors.append(e)
                status, answer = 500, {"error": {"message": repr(e)}}
            return req.send_body(status, json.dumps(answer).encode(), {})
        if method != "POST" or path not in (CHAT_PATH, COMPLETIONS_PATH):
            return req.send_body(404, _error_body(404, f"no route {method} {path}"), {})
        try:
            body = json.loads(raw_body or b"{}")
        except ValueError:
            return req.send_body(400, _error_body(400, "request body is not JSON"), {})

        with self._lock:
            self._requests.append(body)
            n, self._n = self._n, self._n + 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            queued = self._queue.popleft() if self._queue else None
        try:
            try:
                reply = queued if queued is not None else self._handler(body, n)
            except Exception as e:  # a broken test script: answer 500, keep it for the test
                self.errors.append(e)
                reply = Reply(f"scripted handler raised {e!r}", status=500)
            if isinstance(reply, str):
                reply = Reply(reply)
            delay = self.latency_s + reply.delay_s
            if delay > 0:
                self._stopping.wait(delay)
            status, payload = self._render(body, reply, path)
        finally:
            with self._lock:
                self.in_flight -= 1
        req.send_body(status, payload, reply.headers, reply.drip_s)

    def _render(
        self, body: dict[str, Any], reply: Reply, path: str = CHAT_PATH
    ) -> tuple[int, bytes]:
        if reply.raw is not None:
            return reply.status, reply.raw
        if reply.status >= 400:
            return reply.status, _error_body(reply.status, reply.content)
        text = reply.content
        prompt_chars = len(json.dumps(body.get("messages", [])))
        usage = (
            dict(reply.usage)
            if reply.usage
            else {
                "prompt_tokens": prompt_chars // 4 + 1,
                "completion_tokens": (len(text) if isinstance(text, str) else 0) // 4 + 1,
            }
        )
        counts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
        if all(type(n) is int for n in counts):  # a broken scripted usage goes out as is
            usage.setdefault("total_tokens", sum(counts))
        message: Any = {"role": "assistant", "content": text}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.message is not _UNSET:
            message = reply.message
        if path == COMPLETIONS_PATH:
            choice = {"index": 0, "text": text, "logprobs": reply.logprobs,
                      "finish_reason": reply.finish_reason}
            completion = {
                "id": f"cmpl-{uuid.uuid4().hex[:24]}",
                "object": "text_completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": reply.choices if reply.choices is not None else [choice],
                "usage": usage,
            }
            return 200, json.dumps(completion).encode()
        choice = {"index": 0, "message": message, "finish_reason": reply.finish_reason}
        if reply.logprobs is not None:
            choice["logprobs"] = reply.logprobs
        completion = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": reply.choices if reply.choices is not None else [choice],
            "usage": usage,
        }
        return 200, json.dumps(completion).encode()


def _error_body(status: int, message: str | None) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    kind = {429: "rate_limit_exceeded"}.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    err = {"message": message or phrase, "type": kind, "param": None, "code": str(status)}
    return json.dumps({"error": err}).encode()
