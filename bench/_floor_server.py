"""The floor of `bench floor`: the least a Python server can do for our durable add.

One thread, one plain `select.epoll` loop and nothing between the socket and the count:
`recv`, a minimal websocket handshake and frame parser (websockets' C `apply_mask`),
`json.loads`, the count in a dict, the reply's `json.dumps` and `send`. No validation,
budget, actor, metric or limit: it is no server of ours, only a measure of what any
Python server pays for this round trip. It answers our protocol as far as `bench peers`'
load generator speaks it (`hello` and `lobby.create` answered ok, `KIND.add` counted).

Modes (where an add's event goes before its reply is sent):

  memory  nowhere: the reply goes at once;
  sqlite  into SQLite in this thread: each pass's adds are one `executemany` and commit
          (WAL, synchronous=FULL), then their replies;
  writer  into SQLite through a writer process over a pipe, as DESIGN's store does: a
          group (the adds read while the last group was being written) is one frame down
          the pipe, one transaction there, one byte back; then its replies. The loop
          keeps reading while a group is out.

Run as `python -c "import bench._floor_server as f; f.serve(MODE, DIR)"`; it prints
`listening on http://HOST:PORT` once it listens (its writer started).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import select
import socket
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from websockets.speedups import apply_mask

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
LENGTH = struct.Struct("<I")
U16 = struct.Struct("!H")
SCHEMA = ("CREATE TABLE IF NOT EXISTS events (stream TEXT NOT NULL, rev INTEGER NOT NULL, "
          "data TEXT NOT NULL, PRIMARY KEY (stream, rev)) WITHOUT ROWID")
INSERT = "INSERT INTO events (stream, rev, data) VALUES (?, ?, ?)"
OK = b'{"id":1,"ok":true,"result":{}}'


def open_db(path: str) -> sqlite3.Connection:
    """The events table, with our store's pragmas."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(SCHEMA)
    return conn


def server_frame(payload: bytes) -> bytes:
    """An unmasked text frame."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    return bytes((0x81, 126)) + U16.pack(size) + payload


class Conn:
    """One client: its socket and the bytes read but not parsed."""

    __slots__ = ("buf", "open", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf, self.open = sock, b"", False

    def frames(self) -> list[bytes] | None:
        """The whole data frames' payloads in the buffer (None: a close frame)."""
        out, buf, at = [], self.buf, 0
        while len(buf) - at >= 6:
            opcode, size, head = buf[at] & 0x0F, buf[at + 1] & 0x7F, 2
            if size == 126:
                size, head = U16.unpack_from(buf, at + 2)[0], 4
            if len(buf) - at < head + 4 + size:
                break
            mask, start = buf[at + head:at + head + 4], at + head + 4
            at = start + size
            if opcode == 0x8:
                return None
            out.append(apply_mask(buf[start:at], mask))
        self.buf = buf[at:]
        return out


class Loop:
    """The epoll loop; `durable(pending)` makes a pass's adds durable (None: memory)."""

    def __init__(self, durable: Callable[[list[tuple[str, int, str]]], None] | None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
        self.listener.setblocking(False)
        self.epoll = select.epoll()
        self.epoll.register(self.listener.fileno(), select.EPOLLIN)
        self.conns: dict[int, Conn] = {}
        self.counts: dict[str, int] = {}
        self.durable = durable
        self.rows: list[tuple[str, int, str]] = []  # this pass's events
        self.replies: list[tuple[Conn, bytes]] = []  # ... and their replies

    def run(self, extra: Callable[[int], None] | None = None) -> None:
        """Serve for ever; `extra(fd)` handles a file descriptor registered by a mode."""
        listener = self.listener.fileno()
        while True:
            for fd, _ in self.epoll.poll():
                if fd == listener:
                    self.accept()
                elif fd in self.conns:
                    self.read(self.conns[fd])
                elif extra is not None:
                    extra(fd)
            if self.durable is not None and self.rows:
                self.durable(self.rows)

    def accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except BlockingIOError:
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns[sock.fileno()] = Conn(sock)
            self.epoll.register(sock.fileno(), select.EPOLLIN)

    def drop(self, conn: Conn) -> None:
        self.epoll.unregister(conn.sock.fileno())
        del self.conns[conn.sock.fileno()]
        conn.sock.close()

    def read(self, conn: Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except ConnectionError:
            data = b""
        if not data:
            return self.drop(conn)
        conn.buf += data
        if not conn.open:
            return self.handshake(conn)
        payloads = conn.frames()
        if payloads is None:
            return self.drop(conn)
        for payload in payloads:
            self.handle(conn, json.loads(payload))

    def handshake(self, conn: Conn) -> None:
        head, sep, rest = conn.buf.partition(b"\r\n\r\n")
        if not sep:
            return
        key = next(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"sec-websocket-key:"))
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        conn.sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                          b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        conn.buf, conn.open = rest, True

    def handle(self, conn: Conn, message: dict) -> None:
        """An add is counted (and its event kept for the pass); anything else is ok."""
        if not message["op"].endswith(".add"):
            conn.sock.send(server_frame(OK))
            return
        world, args = message["to"], message["args"]
        rev = self.counts[world] = self.counts.get(world, 0) + 1
        reply = server_frame(json.dumps(
            {"id": message["id"], "ok": True,
             "result": {"total": rev, "adds": rev, "revision": rev}},
            separators=(",", ":")).encode())
        if self.durable is None:
            conn.sock.send(reply)
            return
        self.rows.append((world, rev, json.dumps(
            {"type": "added", "amount": args["amount"], "note": args["note"]})))
        self.replies.append((conn, reply))

    def send_replies(self, replies: list[tuple[Conn, bytes]]) -> None:
        for conn, reply in replies:
            if conn.sock.fileno() in self.conns:
                conn.sock.send(reply)


def serve(mode: str, data_dir: str) -> None:
    """Serve in `mode` (memory, sqlite or writer) with the database in `data_dir`."""
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    db = str(Path(data_dir) / "floor.sqlite3")
    if mode == "memory":
        loop = Loop(None)
        extra = None
    elif mode == "sqlite":
        conn = open_db(db)

        def inline(rows: list[tuple[str, int, str]]) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(INSERT, rows)
            conn.execute("COMMIT")
            rows.clear()
            loop.send_replies(loop.replies)
            loop.replies.clear()

        loop = Loop(inline)
        extra = None
    elif mode == "writer":
        writer = subprocess.Popen([sys.executable, __file__, db], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
        assert writer.stdin is not None and writer.stdout is not None
        down, up = writer.stdin.fileno(), writer.stdout.fileno()
        out: list[list[tuple[Conn, bytes]]] = []  # the group being written, if any

        def piped(rows: list[tuple[str, int, str]]) -> None:
            if out:
                return  # this pass's adds join the next group
            body = json.dumps(rows).encode()
            os.write(down, LENGTH.pack(len(body)) + body)
            rows.clear()
            out.append(loop.replies)
            loop.replies = []

        def written(fd: int) -> None:
            os.read(up, 1)
            loop.send_replies(out.pop())

        loop = Loop(piped)
        loop.epoll.register(up, select.EPOLLIN)
        extra = written
    else:
        raise SystemExit(f"unknown mode {mode!r}: memory, sqlite or writer")
    host, port = loop.listener.getsockname()[:2]
    print(f"floor {mode}: listening on http://{host}:{port}", flush=True)
    loop.run(extra)


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            raise SystemExit(0)  # the server is gone
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_groups(db: str) -> None:
    """The writer process: each group from stdin in one transaction, one byte back."""
    conn = open_db(db)
    down, up = sys.stdin.fileno(), sys.stdout.fileno()
    while True:
        rows = json.loads(_read_exactly(down, LENGTH.unpack(_read_exactly(down, 4))[0]))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, rows)
        conn.execute("COMMIT")
        os.write(up, b"k")


if __name__ == "__main__":
    write_groups(sys.argv[1])
