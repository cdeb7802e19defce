"""The Colyseus client codec of `bench peers` against frames a Colyseus 0.16 server sent.

The byte strings below were read off the counter room of bench/peers_node/server.js
(`@colyseus/core` 0.16.26, `@colyseus/schema` 3.0.76); no Node is needed here.
"""

from __future__ import annotations

import msgpack
import pytest

from bench import _colyseus as colyseus

# After three adds: ROOM_STATE_PATCH, every field ADDed (op 128 | index).
PATCH_AFTER_THREE = bytes([15, 128, 3, 0, 0, 0, 129, 3, 0, 0, 0, 130, 0, 0, 0, 0, 0, 0, 8, 64])
# The reply to the first add: ROOM_DATA, "added", msgpack map16 {total, adds, revision}.
REPLY_AFTER_ONE = bytes([13, 165, *b"added", 222, 0, 3, 165, *b"total", 1, 164, *b"adds", 1,
                         168, *b"revision", 1])


def test_an_add_frame_is_room_data_the_type_then_msgpack() -> None:
    frame = colyseus.message("add", {"amount": 1, "note": ""})
    assert frame[:5] == bytes([13, 0xA3]) + b"add"
    assert msgpack.unpackb(frame[5:]) == {"amount": 1, "note": ""}
    assert colyseus.message_prefix("add") == frame[:5]


def test_long_types_are_refused_rather_than_misencoded() -> None:
    with pytest.raises(ValueError, match="31 bytes"):
        colyseus.encode_type("x" * 32)


def test_a_reply_reads_as_its_type_and_payload() -> None:
    assert colyseus.read_message(REPLY_AFTER_ONE) == ("added",
                                                      {"total": 1, "adds": 1, "revision": 1})
    assert colyseus.read_message(PATCH_AFTER_THREE) is None  # not a message


def test_a_patch_reads_as_the_counter_fields() -> None:
    assert colyseus.read_counter(PATCH_AFTER_THREE) == {"revision": 3, "adds": 3, "total": 3.0}
    assert colyseus.read_counter(bytes([14])) == {}  # a full state with nothing set
    assert colyseus.read_counter(REPLY_AFTER_ONE) is None  # not a state frame


def test_a_state_with_children_is_refused_rather_than_misread() -> None:
    with pytest.raises(ValueError, match="flat counter"):
        colyseus.read_counter(bytes([15, 255, 1, 128, 3, 0, 0, 0]))


def test_a_seat_reservation_names_the_room_endpoint() -> None:
    seat = {"room": {"processId": "p1", "roomId": "r2"}, "sessionId": "s3"}
    assert colyseus.room_url("127.0.0.1", 9, seat) == "ws://127.0.0.1:9/p1/r2?sessionId=s3"
