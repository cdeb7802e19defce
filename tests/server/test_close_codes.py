"""Close codes follow RFC 6455: a text frame that is not UTF-8 closes with 1007, a frame
that breaks the protocol with 1002 (Hypercorn answered both with a bare TCP close;
server/transport.py), a message in too many fragments or past the hard limit with 1009;
`/metrics` counts each by its code, and the server keeps serving everyone else."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.transport import MAX_FRAGMENTS
from tests.server.raw_ws import BINARY, PING, TEXT, RawSocket, frame
from tests.server.ws_harness import raw_client, result, running_server

BAD_FRAMES = {
    "invalid UTF-8 in a text frame": (frame(TEXT, b'{"op": "\xff\xfe"}'), 1007),
    "a truncated UTF-8 sequence": (frame(TEXT, b"\xe2\x82"), 1007),
    "a reserved bit without an extension": (frame(TEXT, b"{}", rsv=0b100), 1002),
    "an unmasked client frame": (frame(TEXT, b"{}", mask=False), 1002),
    "an unknown opcode": (frame(0x3, b"x"), 1002),
    "a fragmented control frame": (frame(PING, b"x", fin=False), 1002),
    "a continuation with nothing to continue": (frame(0x0, b"x"), 1002),
    "a new message inside a fragmented one": (frame(TEXT, b"a", fin=False)
                                              + frame(BINARY, b"b"), 1002),
    # Empty fragments add nothing to a message's size: only their count bounds it.
    "a message in too many fragments": (frame(TEXT, b"[", fin=False)
                                        + frame(0x0, b"", fin=False) * MAX_FRAGMENTS, 1009),
    # So also of one skipped past `max_frame` (here from its first fragment, or its second).
    "a skipped message in too many fragments": (
        frame(TEXT, b"x" * 70_000, fin=False) + frame(0x0, b"", fin=False) * MAX_FRAGMENTS,
        1009),
    "a message held, then skipped, in too many fragments": (
        frame(TEXT, b"[", fin=False) + frame(0x0, b"x" * 70_000, fin=False)
        + frame(0x0, b"", fin=False) * (MAX_FRAGMENTS - 1), 1009),
    # Refused on their headers, before the payloads they announce come (or are skipped).
    "a control frame longer than any may be": (bytes([0x89, 0xFF]) + (100_000).to_bytes(
        8, "big") + b"mask", 1002),
    # (Their payloads never come: within `max_frame`, they were waited for, to be read whole.)
    "a control frame longer than 125 bytes": (bytes([0x89, 0xFE]) + (126).to_bytes(2, "big")
                                              + b"mask", 1002),
    "a frame of a reserved opcode longer than 125 bytes": (
        bytes([0x83, 0xFE]) + (126).to_bytes(2, "big") + b"mask", 1002),
    "a message past the hard limit in fragments": (
        frame(TEXT, b"x" * 600_000, fin=False)
        + bytes([0x80, 0xFF]) + (600_000).to_bytes(8, "big") + b"mask", 1009),
}
# Those fragments, more than the bucket of frames that complete no message holds at once,
# spend a larger one (the count is what is tested).
SETTINGS = {what: {"burst": 2 * MAX_FRAGMENTS} for what in BAD_FRAMES
            if what.endswith("in too many fragments")}


@pytest.mark.parametrize("what", sorted(BAD_FRAMES))
async def test_a_protocol_violation_gets_its_close_code(tmp_path: Path, what: str) -> None:
    data, code = BAD_FRAMES[what]
    async with running_server(tmp_path, **SETTINGS.get(what, {})) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        await sock.send(data)
        assert await sock.close_code() == code, what
        await sock.aclose()
        async with raw_client(srv) as c:  # everyone else is served as before
            assert result(await c.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}
        closes = srv.state.metrics.violation_closes.samples()  # (a client's close: none)
        assert [(labels, value) for _, labels, value in closes] == [(f'{{code="{code}"}}', 1)]
