"""Both model clients (the run's `ChatClient`, the lab's `ModelBreeder`) against an endpoint
on 127.0.0.1 that misbehaves: it drips, answers too much, nests too deeply, redirects,
compresses, is not UTF-8, is busy or breaks the connection. Each ends in a closed code,
with no provider text."""

from __future__ import annotations

import gzip
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from actors.chat_completions import MAX_RETRY_AFTER, retry_after
from actors.ecosystem.endpoint import ModelEndpoint
from actors.ecosystem.model_client import ChatClient, ModelFailure
from actors.lab.model_breeder import ModelBreeder

TIMEOUT = 1.0  # seconds a call may take in all
SHADER = "void main() {\n    fragColor = vec4(0.5, 0.5, 0.5, 1.0);\n}"
DIRECTIVE = "Calm tidal greens that breathe slowly"
Answer = Callable[[socket.socket], None]


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()


# A content both clients accept: a JSON object the run reads, a fenced block the lab reads.
GOOD = completion(json.dumps({"text": f"```glsl\n{SHADER}\n```"}))


def head(length: int | str, status: str = "200 OK", *extra: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json",
             f"Content-Length: {length}", "Connection: close", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Endpoint:
    """A loopback HTTP server answering every request with `answer(connection)` after
    reading the request; `requests` counts them."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests = 0
        self.closed = threading.Event()  # set on close: an answer that holds lets go
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            top, _, body = data.partition(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in top.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            while len(body) < length:
                body += conn.recv(65536)
            self.requests += 1
            try:
                self.answer(conn)
            except OSError:  # the client gave up
                pass

    def close(self) -> None:
        self.closed.set()
        self.listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], Endpoint]]:
    started: list[Endpoint] = []

    def start(answer: Answer) -> Endpoint:
        started.append(Endpoint(answer))
        return started[-1]

    yield start
    for endpoint in started:
        endpoint.close()


def run_client(url: str) -> str:
    """The run's client: "ok" or its failure code."""
    client = ChatClient(ModelEndpoint(url, "m", "k-test", TIMEOUT), time.sleep)
    try:
        client.complete("mapping", "system", {"task": "t"})
    except ModelFailure as failure:
        return failure.code
    finally:
        client.close()
    return "ok"


def lab_breeder(url: str) -> str:
    """The lab's breeder: "ok" (a birth, admitted or rejected) or its model error."""
    breeder = ModelBreeder(url, "m", api_key="k-test", timeout=TIMEOUT)
    try:
        birth = breeder.breed("shader", DIRECTIVE)
    finally:
        breeder.close()
    if birth.reason is not None and birth.reason.startswith("model error: "):
        return birth.reason.removeprefix("model error: ")
    return "ok"


CLIENTS = pytest.mark.parametrize("call", [run_client, lab_breeder])


def send(data: bytes) -> Answer:
    return lambda conn: conn.sendall(data)


def drip(data: bytes, *, head_first: bool) -> Answer:
    """`data` a byte every 50 ms (after the head at once, with `head_first`): every wait is
    short, the whole takes seconds."""
    def answer(conn: socket.socket) -> None:
        if head_first:
            top, _, data_ = data.partition(b"\r\n\r\n")
            conn.sendall(top + b"\r\n\r\n")
        else:
            data_ = data
        for k in range(len(data_)):
            conn.sendall(data_[k:k + 1])
            time.sleep(0.05)
    return answer


@CLIENTS
def test_a_well_behaved_endpoint_answers(serve, call) -> None:
    assert call(serve(send(head(len(GOOD)) + GOOD)).url) == "ok"


@CLIENTS
@pytest.mark.parametrize("head_first", [True, False], ids=["body", "head_and_body"])
def test_a_dripped_answer_ends_at_the_deadline(serve, call, head_first: bool) -> None:
    endpoint = serve(drip(head(len(GOOD)) + GOOD, head_first=head_first))
    assert call(endpoint.url) == "transport"


@CLIENTS
def test_an_answer_that_stops_short_ends_in_transport(serve, call) -> None:
    def answer(conn: socket.socket) -> None:
        conn.sendall(head(len(GOOD)) + GOOD[:10])
        endpoint.closed.wait(30)
    endpoint = serve(answer)
    assert call(endpoint.url) == "transport"


def big(size: int) -> bytes:
    """A well-formed completion of more than `size` bytes."""
    return completion(json.dumps({"text": "x" * size}))


@CLIENTS
def test_an_answer_over_the_bound_is_malformed(serve, call) -> None:
    body = big(8 * 2**20)
    assert call(serve(send(head(len(body)) + body)).url) == "malformed_response"


@CLIENTS
def test_a_content_length_past_the_bound_is_read_no_further(serve, call) -> None:
    def answer(conn: socket.socket) -> None:
        conn.sendall(head(500_000_000) + b" " * (2 * 2**20))
        endpoint.closed.wait(30)
    endpoint = serve(answer)
    assert call(endpoint.url) == "malformed_response"


@CLIENTS
def test_a_compressed_answer_is_malformed(serve, call) -> None:
    bomb = gzip.compress(big(8 * 2**20))  # ~8 KB on the wire
    answer = send(head(len(bomb), "200 OK", "Content-Encoding: gzip") + bomb)
    assert call(serve(answer).url) == "malformed_response"


@CLIENTS
@pytest.mark.parametrize("body", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b"\xff" + GOOD,
    GOOD.decode().encode("utf-16"),
    GOOD.replace(b'"prompt_tokens": 1', b'"prompt_tokens": NaN'),
], ids=["deep", "deep_choices", "not_utf8", "utf16", "nan"])
def test_a_body_that_is_not_strict_json_is_malformed(serve, call, body: bytes) -> None:
    assert call(serve(send(head(len(body)) + body)).url) == "malformed_response"


@CLIENTS
@pytest.mark.parametrize("status", ["301 Moved Permanently", "307 Temporary Redirect"])
def test_a_redirect_is_not_followed(serve, call, status: str) -> None:
    elsewhere = serve(send(head(len(GOOD)) + GOOD))
    location = f"Location: {elsewhere.url}/chat/completions"
    assert call(serve(send(head(0, status, location))).url) == "http_status"
    assert elsewhere.requests == 0


@CLIENTS
@pytest.mark.parametrize("status", ["429 Too Many Requests", "500 Internal Server Error",
                                    "502 Bad Gateway", "503 Service Unavailable",
                                    "504 Gateway Timeout"])
def test_a_busy_endpoint_is_unavailable(serve, call, status: str) -> None:
    """The statuses of a server that may answer if asked again; any other is http_status."""
    assert call(serve(send(head(0, status))).url) == "unavailable"


@CLIENTS
@pytest.mark.parametrize("status", ["400 Bad Request", "401 Unauthorized", "501 Not Implemented"])
def test_another_status_is_http_status(serve, call, status: str) -> None:
    assert call(serve(send(head(0, status))).url) == "http_status"


def reset(conn: socket.socket) -> None:
    """Break the connection (RST) instead of answering."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@CLIENTS
@pytest.mark.parametrize("answer", [reset, send(head(len(GOOD)) + GOOD[:10])],
                         ids=["reset", "closed_short"])
def test_a_connection_the_endpoint_breaks_is_unavailable(serve, call, answer: Answer) -> None:
    """Broken by the server, not by the call's deadline (that is transport, above)."""
    assert call(serve(answer).url) == "unavailable"


@pytest.mark.parametrize("value, seconds", [
    ("7", 7.0), (" 9 ", 9.0), ("0", 0.0), ("10", 10.0), ("11", MAX_RETRY_AFTER),
    ("3600", MAX_RETRY_AFTER), ("9" * 400, MAX_RETRY_AFTER),
    ("Wed, 21 Oct 2015 07:28:00 GMT", None), ("1.5", None), ("-1", None), ("\u0663", None),
    ("", None), (None, None),
], ids=["seconds", "spaced", "zero", "at_cap", "past_cap", "hour", "huge", "date", "fraction",
        "negative", "arabic_digit", "empty", "absent"])
def test_retry_after_is_delta_seconds(value: str | None, seconds: float | None) -> None:
    """Delta-seconds, capped at MAX_RETRY_AFTER where parsed: no caller waits longer."""
    assert retry_after(value) == seconds


def test_the_run_client_carries_retry_after(serve) -> None:
    endpoint = serve(send(head(0, "429 Too Many Requests", "Retry-After: 7")))
    client = ChatClient(ModelEndpoint(endpoint.url, "m", "k-test", TIMEOUT), time.sleep)
    with pytest.raises(ModelFailure) as failure:
        client.complete("mapping", "system", {"task": "t"})
    client.close()
    assert (failure.value.code, failure.value.retry_after) == ("unavailable", 7.0)


@pytest.mark.parametrize("content", [
    "[" * 100_000 + "]" * 100_000,
    '{"text": NaN}',
    '{"text": 1e400}',
    '{"n": 123456789012345678901234567890}',
], ids=["deep", "nan", "infinite", "huge_int"])
def test_run_content_that_is_not_strict_json_is_invalid_json(serve, content: str) -> None:
    body = completion(content)
    assert run_client(serve(send(head(len(body)) + body)).url) == "invalid_json"
