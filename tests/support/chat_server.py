"""A real OpenAI-compatible chat server on loopback for judge tests: stdlib http.server in a thread.

``GET /v1/models`` lists one model; ``POST /v1/chat/completions`` answers with ``reply(messages)``
(a test sets it), after ``delay_s``; ``status`` other than 200 answers with that HTTP error,
``raw`` replaces the JSON body. Every chat request is counted and its messages kept.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "judge-under-test"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # the default 5 drops concurrent connects (a 1 s SYN retry each)


class ChatServer:
    def __init__(self) -> None:
        self.reply: Callable[[list[dict[str, Any]]], str] = lambda messages: "Score: 7"
        self.delay_s = 0.0
        self.status = 200
        self.raw: bytes | None = None
        self.requests: list[list[dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", 0), self._handler())
        self.httpd.handle_error = lambda request, address: None  # a client that gave up waiting
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def chat_requests(self) -> int:
        with self.lock:
            return len(self.requests)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet test output
                pass

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path != "/v1/models":
                    return self._send(404, b'{"error": "not found"}')
                self._send(200, json.dumps({"data": [{"id": MODEL}]}).encode())

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions":
                    return self._send(404, b'{"error": "not found"}')
                with server.lock:
                    server.requests.append(body["messages"])
                time.sleep(server.delay_s)
                if server.status != 200:
                    return self._send(server.status, b'{"error": "judge overloaded"}')
                if server.raw is not None:
                    return self._send(200, server.raw)
                text = server.reply(body["messages"])
                choice = {"index": 0, "message": {"role": "assistant", "content": text}}
                reply = {"model": body["model"], "choices": [choice]}
                self._send(200, json.dumps(reply).encode())

        return Handler
