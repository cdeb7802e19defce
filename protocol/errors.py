"""The closed set of error codes a reply can carry, and the exception that carries one.

Every refusal the server sends is a `ProtocolError`: a code, a plain sentence, and a JSON
object of detail. The set of codes is closed: `ErrorCode` below, plus the world codes a
world kind declares as its own StrEnum and admits with `register_world_codes` (in its
`protocol/ops/<kind>.py`, next to its ops). A ProtocolError with any other code is a bug
and raises at once. Every code is documented in `docs/` (a test checks). `over_budget`
builds the one shape of a spent budget's refusal, whichever layer refuses
(server/budgets.py, or the directory's bound on live worlds).
"""

from __future__ import annotations

import inspect
from enum import StrEnum
from typing import Any, TypeVar


class ErrorCode(StrEnum):
    """Why a request was refused; the comment says whose fault it is."""

    # The client sent something wrong; resending the same frame fails the same way.
    BAD_REQUEST = "bad_request"  # not JSON, wrong shape or type, a bad field (detail.path)
    UNKNOWN_OP = "unknown_op"  # the op is not registered
    UNKNOWN_ACTOR = "unknown_actor"  # `to` names no world that exists
    ALREADY_EXISTS = "already_exists"  # a create named a world that exists
    TOO_LARGE = "too_large"  # a frame or fragmented message longer than the max_frame
    # The caller is not allowed.
    UNAUTHORIZED = "unauthorized"  # the hello token is unknown or revoked
    FORBIDDEN = "forbidden"  # the caller's role is below the op's minimum role
    # The caller raced someone or went too fast; retrying later may succeed.
    STALE_REVISION = "stale_revision"  # expected_revision is not the world's revision
    RATE_LIMITED = "rate_limited"  # the connection's token bucket is empty
    OVERLOADED = "overloaded"  # the actor's mailbox is full
    OVER_BUDGET = "over_budget"  # a budget of this client is spent (detail.budget names it)
    TIMEOUT = "timeout"  # the actor did not answer within the ask timeout
    # The server's side.
    ACTOR_RESTARTED = "actor_restarted"  # the actor crashed handling this; it restarted from the store
    UNAVAILABLE = "unavailable"  # the server is shutting down, or the actor stopped or won't load
    INTERNAL = "internal"  # a bug in the server; it was logged


_world_codes: dict[str, type[StrEnum]] = {}  # value -> the world enum that declared it

E = TypeVar("E", bound=type[StrEnum])


def register_world_codes(codes: E) -> E:
    """Admit a world's codes into the closed set (usable as a class decorator).

    ValueError when a value is already a protocol code or another world's code.
    """
    for member in codes:
        owner = _world_codes.get(member.value)
        if member.value in ErrorCode._value2member_map_ or owner not in (None, codes):
            raise ValueError(f"error code {member.value!r} is already defined")
        _world_codes[member.value] = codes
    return codes


def world_codes() -> dict[str, type[StrEnum]]:
    """Every registered world code, with the enum that declared it."""
    return dict(_world_codes)


class ProtocolError(Exception):
    """A refusal with a code, a sentence for humans, and structured detail for programs.

    `delivered` is False on a refusal made before its message reached the world it was
    for (the directory's, or a full or closed mailbox's: actors/runtime/): the world never
    had it, so a budget its caller spent on it is given back (server/claims.py). It is
    not part of the reply."""

    def __init__(self, code: StrEnum | str, message: str,
                 detail: dict[str, Any] | None = None, *, delivered: bool = True) -> None:
        super().__init__(message)
        if code in ErrorCode._value2member_map_:
            self.code: StrEnum = ErrorCode(code)
        elif code in _world_codes:
            self.code = _world_codes[code](code)
        else:
            raise ValueError(f"{code!r} is not a protocol error code nor a registered world code")
        self.message = message
        self.detail: dict[str, Any] = dict(detail or {})
        self.delivered = delivered

    def to_wire(self) -> dict[str, Any]:
        """The `error` object of a reply frame."""
        return {"code": self.code.value, "message": self.message, "detail": self.detail}

    def __repr__(self) -> str:
        return f"ProtocolError({self.code.value!r}, {self.message!r}, {self.detail!r})"


def over_budget(budget: str, message: str, limit: float,
                retry_after: float | None = None) -> ProtocolError:
    """The refusal of a spent budget."""
    detail: dict[str, object] = {"budget": budget, "limit": limit}
    if retry_after is not None:
        detail["retry_after"] = round(max(retry_after, 0.001), 3)
    return ProtocolError(ErrorCode.OVER_BUDGET, message, detail)


_RESUMABLE = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE
              | inspect.CO_ASYNC_GENERATOR)


def forget_frames(error: BaseException | None) -> None:
    """Clear the locals of the frames `error`'s traceback holds, and of those of the errors
    it came from or gathered. An error kept by something one of its frames holds (a list of
    errors a cattrs structure function gathers, a websockets protocol's failure) is a
    reference cycle, freed only by the cyclic garbage collector with all the frames hold
    (tests/server/test_cyclic_garbage.py). A frame still running keeps its locals, and so
    does a generator's or coroutine's: clearing one suspended would close it (a task of
    ours, to be resumed: tests/server/test_transport.py)."""
    todo, seen = [error], set()
    while todo:
        each = todo.pop()
        if each is None or id(each) in seen:
            continue
        seen.add(id(each))
        tb = each.__traceback__
        while tb is not None:
            if not tb.tb_frame.f_code.co_flags & _RESUMABLE:
                try:
                    tb.tb_frame.clear()
                except RuntimeError:
                    pass  # running
            tb = tb.tb_next
        todo += [each.__cause__, each.__context__]
        if isinstance(each, BaseExceptionGroup):
            todo += each.exceptions
