"""The frames of the websocket protocol and the parser that turns one text frame into them.

Client to server (JSON objects in text frames):

    {"op": "hello", "protocol": 1, "token": "...", "client": "name/1.0", "id": 0}
    {"id": 7, "op": "lobby.list", "to": "lobby:main", "args": {}}
    {"id": 8, "op": "counter.add", "to": "counter:a", "args": {...}, "request_id": "k1"}
    {"id": 8, "op": "subscribe", "to": "scratch:a", "since": 120}
    {"id": 9, "op": "unsubscribe", "to": "scratch:a"}

Server to client:

    {"id": 7, "ok": true, "result": {...}}
    {"id": 7, "ok": false, "error": {"code": "...", "message": "...", "detail": {...}}}
    {"topic": "scratch:a", "rev": 121, "kind": "events" | "snapshot" | "resync", "data": ...}

`parse_frame` checks only the envelope; an op's `args` are checked by the converter
against the op's attrs class (`protocol.convert`).
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from protocol.errors import ErrorCode, ProtocolError
from protocol.jsontext import (
    MAY_BE_BAD_TEXT,
    BadNumber,
    bad_text_path,
    compact_encoder,
    exact_int,
    finite_float,
    place_refused_number,
    reject_constant,
    strict_decoder,
)
from protocol.text import utf16_len

PROTOCOL_VERSION = 1
MAX_ID = 2**53 - 1  # the largest integer a JavaScript client can hold exactly
# An actor id is `kind:name`; names are short and URL-safe so pages can link to them.
# A world name: 1-80 of letters, digits, `_`, `.`, `-`, not led by `.` (covers game ids).
ACTOR_ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,79}$")
# A write's idempotency key, chosen by the client: 1-64 of letters, digits, `_.:-`.
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

_HELLO_KEYS = frozenset({"op", "id", "protocol", "token", "client", "key"})
MAX_TOKEN = 200  # characters of a hello's token (issued ones have 47)
# An anonymous caller's key (the hello reply hands one out; sent back, it is that caller).
KEY_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_REQUEST_KEYS = frozenset({"op", "id", "to", "args", "request_id"})
_SUBSCRIBE_KEYS = frozenset({"op", "id", "to", "since"})
_UNSUBSCRIBE_KEYS = frozenset({"op", "id", "to"})


@attrs.frozen
class Hello:
    """The first frame of a connection: protocol version, optional token, client name, and
    the key of an anonymous caller coming back."""

    id: int
    protocol: int
    token: str | None
    client: str
    key: str | None = None


@attrs.frozen
class Request:
    """A call of a registered op on the actor `to` (None: the op's default actor).

    `request_id` (optional) makes a write idempotent: the world answers the same caller's
    retry that carries the same one with the first result instead of applying it again
    (another caller's write with that id is its own).
    """

    id: int
    op: str
    to: str | None
    args: dict[str, Any]
    request_id: str | None = None


@attrs.frozen
class Subscribe:
    """Follow the pushes of actor `to`; `since` asks for the events after that revision."""

    id: int
    to: str
    since: int | None


@attrs.frozen
class Unsubscribe:
    """Stop following actor `to`."""

    id: int
    to: str


Frame = Hello | Request | Subscribe | Unsubscribe


def _bad(message: str, request_id: int | None, **detail: Any) -> ProtocolError:
    return for_request(ProtocolError(ErrorCode.BAD_REQUEST, message, detail), request_id)


def for_request(error: ProtocolError, request_id: int | None) -> ProtocolError:
    """`error`, marked as the refusal of the frame `request_id` (see `request_id_of`)."""
    error.request_id = request_id  # type: ignore[attr-defined]
    return error


def request_id_of(error: ProtocolError) -> int | None:
    """The id a refused frame should be answered with (None when it had no valid id)."""
    return getattr(error, "request_id", None)


_decode = strict_decoder(reject_constant, exact_int, finite_float)


def _json_kind(value: Any) -> str:
    """What a decoded JSON value is, in JSON words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "a list"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_actor_id(value: Any, field: str, request_id: int | None) -> str:
    """Return `value` if it is a well-formed `kind:name` actor id, else raise bad_request."""
    if not isinstance(value, str):
        raise _bad(f"{field}: expected a string 'kind:name'", request_id, path=field)
    if not ACTOR_ID_RE.match(value):
        raise _bad(f"{field}: {value[:80]!r} is not an actor id 'kind:name'", request_id,
                   path=field)
    return value


def _readable_id(obj: Any) -> int | None:
    """The id of a frame refused before its id was checked, when it has a valid one (a
    hello without one: its default, 0, as its other refusals)."""
    if not isinstance(obj, dict):
        return None
    rid = obj.get("id", 0 if obj.get("op") == "hello" else None)
    return rid if _is_int(rid) and 0 <= rid <= MAX_ID else None


def _parse_id(obj: dict[str, Any], default: int | None) -> int:
    if "id" not in obj:
        if default is None:
            raise _bad("id: required field missing", None, path="id")
        return default
    value = obj["id"]
    if not _is_int(value) or not 0 <= value <= MAX_ID:
        raise _bad(f"id: expected an integer from 0 to {MAX_ID}", None, path="id")
    return value


def _check_keys(obj: dict[str, Any], allowed: frozenset[str], request_id: int | None) -> None:
    if obj.keys() <= allowed:
        return
    extra = sorted(set(obj) - allowed)
    if extra:
        raise _bad(f"{extra[0]}: unknown key in a {obj['op']!r} frame", request_id,
                   path=extra[0])


def parse_frame(text: str) -> Frame:
    """Parse one text frame into a typed frame; raise a bad_request ProtocolError otherwise.

    The error carries the frame's id when one could be read (`request_id_of`), so the
    reply can name the request it refuses.
    """
    try:
        obj = _decode(text)
    except BadNumber as exc:
        raise _bad_number(text, exc) from None
    except (ValueError, RecursionError) as exc:
        raise _bad(f"not JSON: {exc}"[:200], None) from None
    # NUL and lone surrogates can only arrive as \u escapes (the frame itself is UTF-8).
    if "\\u" in text and MAY_BE_BAD_TEXT.search(text) and (
            where := bad_text_path(obj)) is not None:
        raise _bad(f"{where}: text must be valid Unicode (no NUL, no lone surrogate)",
                   _readable_id(obj), path=where)
    if not isinstance(obj, dict):
        raise _bad(f"expected a JSON object, got {_json_kind(obj)}", None)
    op = obj.get("op")
    if not isinstance(op, str):
        raise _bad("op: expected a string", _readable_id(obj), path="op")
    if op == "hello":
        return _parse_hello(obj)
    rid = _parse_id(obj, None)
    if op == "subscribe":
        _check_keys(obj, _SUBSCRIBE_KEYS, rid)
        since = obj.get("since")
        if since is not None and (not _is_int(since) or since < 0):
            raise _bad("since: expected a non-negative integer or null", rid, path="since")
        return Subscribe(rid, check_actor_id(obj.get("to"), "to", rid), since)
    if op == "unsubscribe":
        _check_keys(obj, _UNSUBSCRIBE_KEYS, rid)
        return Unsubscribe(rid, check_actor_id(obj.get("to"), "to", rid))
    _check_keys(obj, _REQUEST_KEYS, rid)
    to = obj.get("to")
    if to is not None:
        check_actor_id(to, "to", rid)
    args = obj.get("args", {})
    if not isinstance(args, dict):
        raise _bad("args: expected an object", rid, path="args")
    key = obj.get("request_id")
    if key is not None and not (isinstance(key, str) and REQUEST_ID_RE.match(key)):
        raise _bad("request_id: expected 1-64 of letters, digits, '_', '.', ':', '-'", rid,
                   path="request_id")
    return Request(rid, op, to, args, key)


def _bad_number(text: str, refused: BadNumber) -> ProtocolError:
    """The refusal of a frame holding a number beyond what every JSON reader holds exactly:
    it names the first one's path (`place_refused_number`) and carries the frame's id,
    unless the rest of the text is not JSON either."""
    found = place_refused_number(text, refused)
    return _bad(found.message, _readable_id(found.value), **found.detail)


def _parse_hello(obj: dict[str, Any]) -> Hello:
    rid = _parse_id(obj, 0)
    _check_keys(obj, _HELLO_KEYS, rid)
    version = obj.get("protocol")
    if version != PROTOCOL_VERSION or not _is_int(version):
        raise _bad(f"protocol: this server speaks protocol {PROTOCOL_VERSION}", rid,
                   path="protocol", supported=[PROTOCOL_VERSION])
    token = obj.get("token")
    if token is not None and not isinstance(token, str):
        raise _bad("token: expected a string or null", rid, path="token")
    if token is not None and utf16_len(token) > MAX_TOKEN:
        raise _bad(f"token: at most {MAX_TOKEN} characters", rid, path="token")
    client = obj.get("client", "")
    if not isinstance(client, str) or utf16_len(client) > 100:
        raise _bad("client: expected a string of at most 100 characters", rid, path="client")
    key = obj.get("key")
    if key is not None and (not isinstance(key, str) or not KEY_RE.match(key)):
        raise _bad("key: expected the key a hello reply gave (16-64 of A-Z, a-z, 0-9, "
                   "'_', '-') or null", rid, path="key")
    return Hello(rid, version, token or None, client, key)


# ---- server -> client ---------------------------------------------------------------------

_dumps = compact_encoder(ensure_ascii=False)


def encode_result(request_id: int, result: Any) -> str:
    """A successful reply frame."""
    return _dumps({"id": request_id, "ok": True, "result": result})


def encode_error(request_id: int | None, error: ProtocolError) -> str:
    """A refusal reply frame; `request_id` is None when the frame had no readable id."""
    return _dumps({"id": request_id, "ok": False, "error": error.to_wire()})


def encode_push(topic: str, rev: int, kind: str, data: Any) -> str:
    """A push frame: `events` (a list, the last one at `rev`), `snapshot` or `resync`."""
    return _dumps({"topic": topic, "rev": rev, "kind": kind, "data": data})
