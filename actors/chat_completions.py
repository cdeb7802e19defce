"""One chat-completions exchange, held to a deadline and a size: the HTTP both model clients
make (the run's `ecosystem.model_client.ChatClient`, the lab's `lab.model_breeder.ModelBreeder`).
Edge I/O: blocking httpx, which a worker thread runs.

An endpoint's answer is untrusted. `answer` gives up on a call `seconds` after it began,
wherever it waits (httpx's timeout bounds each wait, so headers or a body dripped a byte at a
time would hold a call for good: at the deadline the call's socket is shut down); it reads
at most `MAX_ANSWER` bytes, follows no redirect, takes no content coding (a compressed answer
could be any size once inflated), and parses strict UTF-8 JSON (`loads`). Every failure is a
`ChatError` with a closed code and no provider text; `unavailable` is the one a caller may
try again (the ecosystem's `CallBudget.call` does, a bounded number of times; the lab's birth
loop on its own timer), not before its Retry-After, which `retry_after` caps at MAX_RETRY_AFTER.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

import httpx

from protocol.jsontext import exact_int, finite_float, strict_decoder

MAX_RETRY_AFTER = 10.0  # seconds: the longest Retry-After a model client waits for
MAX_ANSWER = 2**20  # bytes of one answer; a completion is a few KB, a lab birth under 100 KB
BUSY = frozenset({429, 500, 502, 503, 504})  # statuses of a server that may answer later
# A connection the server broke mid-exchange (a reset, a close before the answer's end):
# `unavailable` too, unless the call's own deadline shut it down (`transport`).
BROKEN = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)

CODES = (
    "transport",           # connection refused, a wait past the timeout, the call past its deadline
    "unavailable",         # a BUSY status, or the connection broken by the server: ask again
    "http_status",         # any other non-2xx answer (a redirect included: none is followed)
    "malformed_response",  # not a chat-completions body, or over MAX_ANSWER, or encoded
)


class ChatError(Exception):
    """A failed exchange; carries only a code from `CODES` and, for `unavailable`, the
    seconds the answer's Retry-After asked to wait, at most MAX_RETRY_AFTER (None when it
    named none)."""

    def __init__(self, code: str, retry_after: float | None = None) -> None:
        assert code in CODES, code
        super().__init__(code)
        self.code = code
        self.retry_after = retry_after


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_decode = strict_decoder(_reject_constant, exact_int, finite_float)


def loads(text: str) -> Any:
    """JSON text as the protocol reads it (no NaN or infinities, integers within
    +-(2^53 - 1)); raises ValueError for anything else, nesting too deep to parse included."""
    try:
        return _decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def client(timeout: float, api_key: str | None) -> httpx.Client:
    """An HTTP client for `answer`: each wait at most `timeout`, no connection kept between
    calls (each call's deadline shuts down the connection it opened), no redirects, nothing
    from the environment (proxies, .netrc)."""
    headers = {"Accept-Encoding": "identity"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return httpx.Client(headers=headers, timeout=timeout, follow_redirects=False,
                        trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))


def answer(http: httpx.Client, url: str, body: dict[str, Any], seconds: float
           ) -> tuple[str, Mapping[str, Any]]:
    """POST `body` to `url`; the message content and the usage object (empty when absent)
    of the answer, within `seconds` in all."""
    with _Deadline(seconds) as deadline:
        try:
            with http.stream("POST", url, json=body,
                             extensions={"trace": deadline.trace}) as response:
                if response.status_code in BUSY:
                    raise ChatError("unavailable",
                                    retry_after(response.headers.get("Retry-After")))
                if not response.is_success:
                    raise ChatError("http_status")
                if response.headers.get("Content-Encoding", "identity") != "identity":
                    raise ChatError("malformed_response")
                raw = _read(response)
        except httpx.HTTPError as error:
            broken = isinstance(error, BROKEN) and not deadline.expired
            raise ChatError("unavailable" if broken else "transport") from None
    try:
        payload = loads(raw.decode("utf-8"))
        content = payload["choices"][0]["message"]["content"]
        usage = payload.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise ChatError("malformed_response") from None
    if not isinstance(content, str) or not isinstance(usage, Mapping):
        raise ChatError("malformed_response")
    return content, usage


def pause(seconds: float) -> None:
    """Block the calling thread `seconds` on the process's clock: how a caller outside trio
    (the command line) waits before it tries a call again."""
    time.sleep(seconds)


def retry_after(value: str | None) -> float | None:
    """The seconds a Retry-After header names (delta-seconds), at most MAX_RETRY_AFTER; None
    when it is absent or an HTTP-date (which only a wall clock could turn into a wait)."""
    if value is None:
        return None
    value = value.strip()
    return min(float(value), MAX_RETRY_AFTER) if value.isascii() and value.isdigit() else None


def _read(response: httpx.Response) -> bytes:
    """The body, refused once it passes MAX_ANSWER (whatever Content-Length said)."""
    chunks, size = [], 0
    for chunk in response.iter_raw():
        size += len(chunk)
        if size > MAX_ANSWER:
            raise ChatError("malformed_response")
        chunks.append(chunk)
    return b"".join(chunks)


class _Deadline:
    """Shuts down the sockets a call opened once `seconds` have passed, which ends any wait
    the call is in (a read, a write) at once."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Self:
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._timer.cancel()

    @property
    def expired(self) -> bool:
        """True once the deadline shut the call's sockets down."""
        with self._lock:
            return self._expired

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's `trace` hook: keeps the socket of each connection the call opens (the
        TLS one too: wrapping detaches the plain socket)."""
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        sock = info["return_value"].get_extra_info("socket")
        with self._lock:
            self._sockets.append(sock)
            expired = self._expired
        if expired:
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already (the call ended), or detached by TLS
        pass
