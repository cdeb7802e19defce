"""A connection's hello: read by the connection's own task before the reactor reads it
(`handshake`: frames before it are refused, a pause after each), and the answer to it
(`greet`): who it is, or why it may not be anyone.

No token: a spectator (an agent on an `--open` server) under a name of its own
(`anonymous~<digest>`), so no two anonymous callers share an identity and one cannot write
as another's agent. The name stands for a secret key the reply hands out (`key`); a client
that says hello again with it (after a reconnect) is the same caller, and nobody without
the key can be. A token: the principal it was issued to; a token
that is unknown or revoked is refused `unauthorized` and the socket closes (1008). Refused
hellos are budgeted per client address (`hello_failures`): past the budget a bad token is
refused `over_budget`, untraced, while a valid one still passes (the budget bounds the work
and log lines of bad tokens; guessing a 256-bit token is hopeless anyway). Every other
refusal leaves a trace with the peer's address (server/trace.py).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

import trio
from websockets.frames import CloseCode

from protocol.envelope import (
    PROTOCOL_VERSION,
    Hello,
    encode_error,
    encode_result,
    for_request,
    request_id_of,
)
from protocol.errors import ErrorCode, ProtocolError
from server.auth import Principal

if TYPE_CHECKING:
    from server.session import Session

ANONYMOUS = "anonymous"  # anonymous callers are `anonymous~<digest of their key>`
# Before the hello, which nothing is charged to: a longer frame is refused unread (a hello
# is far shorter), and after each refusal the connection is not read for a while.
MAX_HELLO = 4096  # characters
HELLO_REFUSED_PAUSE = 0.1  # seconds


def new_key() -> str:
    """A fresh anonymous key (128 random bits)."""
    return secrets.token_urlsafe(16)


def anonymous_name(key: str) -> str:
    """The identity an anonymous key stands for (a digest: names are stored in events)."""
    digest = hashlib.sha256(f"petridish-anonymous:{key}".encode()).hexdigest()
    return f"{ANONYMOUS}~{digest[:16]}"


async def handshake(session: Session) -> bool:
    """Wait for a valid hello; True when the connection may go on."""
    with trio.move_on_after(session.server.config.hello_timeout):
        while True:
            text = await _receive_text(session)
            if text is None:
                return False
            try:
                frame = _parse_first(session, text, trio.current_time())
            except ProtocolError as error:
                await session.refuse_now(request_id_of(error), error)
                await trio.sleep(HELLO_REFUSED_PAUSE)
                continue
            if await greet(session, frame):
                return True
            await session.close_now(CloseCode.POLICY_VIOLATION)
            return False
    await session.close_now(CloseCode.POLICY_VIOLATION)
    return False


async def _receive_text(session: Session) -> str | None:
    """The next text frame, a refusal already sent for another message (binary, or
    `Skipped`); None on disconnect."""
    while True:
        message = await session.ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        session.server.metrics.frames_in.inc()
        text = message.get("text")
        if text is not None:
            return text
        refusal = session.unread_refusal(message.get("skipped"))
        await session.send_now(encode_error(None, refusal))


def _parse_first(session: Session, text: str, now: float) -> Hello:
    """A hello, or the refusal of a frame before it: one longer than MAX_HELLO is not
    parsed (it still spends a token)."""
    if len(text) <= MAX_HELLO:
        frame = session.parse(text, now)
    elif not session.bucket.take(now):
        raise session.rate_limited(None)
    else:
        frame = None
    if not isinstance(frame, Hello):
        raise for_request(ProtocolError(
            ErrorCode.BAD_REQUEST, "the first frame must be a hello", {"expected": "hello"}),
            None if frame is None else frame.id)
    return frame


async def greet(session: Session, hello: Hello) -> bool:
    """Answer `hello` on `session`; True when the connection may go on (else the caller
    closes it with 1008)."""
    server = session.server
    cfg = server.config
    ledger = server.ledger
    now = trio.current_time()
    key = None
    if hello.token is None:
        role = "agent" if cfg.open_mode else "spectator"
        key = hello.key or new_key()
        principal = Principal(role, anonymous_name(key))
    else:
        try:
            principal = server.check_token(hello.token, session.address, "a hello")
        except ProtocolError as refusal:
            await session.refuse_now(hello.id, refusal)
            return False
    session.principal = principal
    session.greeted = True
    ledger.greeted(session.address, now, session)
    session.account = ledger.client_account(principal.name if principal.digest else None,
                                            session.address, principal.role, now)
    if session.account is not None:
        session.account.sessions += 1  # (given back as the session ends)
    reply = {"protocol": PROTOCOL_VERSION, "role": principal.role, "name": principal.name,
             "client": hello.client, "max_frame": cfg.max_frame, "rate": cfg.rate,
             "burst": cfg.burst}
    if key is not None:
        reply["key"] = key
    await session.send_now(encode_result(hello.id, reply))
    return True
