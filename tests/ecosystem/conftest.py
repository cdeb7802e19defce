"""Ecosystem test fixtures: a loopback-only network guard and a scripted chat-completions server."""

from __future__ import annotations

import ipaddress
import json
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

BLOCKED: list[Any] = []


def _is_loopback(address: Any) -> bool:
    if isinstance(address, tuple) and address:
        try:
            return ipaddress.ip_address(address[0]).is_loopback
        except ValueError:
            return address[0] == "localhost"
    return True  # AF_UNIX paths are local by nature


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Every ecosystem test: a connect to anything but loopback raises and is recorded
    (except the opt-in `live_model` tests, which call the endpoint they are given)."""
    if request.node.get_closest_marker("live_model") is not None:
        return
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            BLOCKED.append(address)
            raise ConnectionRefusedError(f"test guard: {address!r} is not loopback")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_loopback(address):
            BLOCKED.append(address)
            raise ConnectionRefusedError(f"test guard: {address!r} is not loopback")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


class FakeModel:
    """A chat-completions server on 127.0.0.1 answering from a script, in order.

    Script items: a dict (sent as the JSON message content), a str (sent verbatim as
    content, e.g. invalid JSON), bytes (sent verbatim as the whole response body), an int
    (an HTTP error status with a secret-looking body), a tuple (status, Retry-After: the
    status with that header), None (the connection reset, no answer) or a float (stall that
    many seconds, then answer `{}`: a client with a shorter timeout has given up by then).
    """

    def __init__(self) -> None:
        self.script: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.stalled = threading.Event()  # set on close: stalls end at once
        self.hold = threading.Event()  # cleared: requests wait before answering until set
        self.hold.set()
        self.arrived = threading.Semaphore(0)  # released as each request arrives
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.arrived.release()
                model.hold.wait(30)
                model.requests.append({"path": self.path, "body": body,
                                       "auth": self.headers.get("Authorization"),
                                       "peer": self.client_address[0],
                                       "task": json.loads(body["messages"][1]["content"])})
                item = model.script.pop(0) if model.script else 500
                if isinstance(item, float):
                    model.stalled.wait(item)
                    item = {}
                if item is None:  # RST: linger on, for no time
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                if isinstance(item, int | tuple):
                    status, retry_after = item if isinstance(item, tuple) else (item, None)
                    self._send(status, b'{"error": "PROVIDER-SECRET-PAYLOAD"}',
                               {} if retry_after is None else {"Retry-After": str(retry_after)})
                    return
                if isinstance(item, bytes):
                    self._send(200, item)
                    return
                content = item if isinstance(item, str) else json.dumps(item)
                payload = {"id": "x", "object": "chat.completion",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": content}}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                     "total_tokens": 15}}
                self._send(200, json.dumps(payload).encode())

            def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None
                      ) -> None:
                try:
                    self.send_response(status)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a stalled answer)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                       daemon=True)
        self.thread.start()

    def tasks(self) -> list[str]:
        """The `task` of every request received, in order."""
        return [r["task"]["task"] for r in self.requests]

    def close(self) -> None:
        self.stalled.set()
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    """A running scripted model server; shut down after the test."""
    model = FakeModel()
    try:
        yield model
    finally:
        model.close()
