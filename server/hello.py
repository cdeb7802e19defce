"""The answer to a connection's hello: who it is, or why it may not be anyone.

No token: a spectator (an agent on an `--open` server) under a name of its own
(`anonymous~<digest>`), so no two anonymous callers share an identity and one cannot write
as another's agent. The name stands for a secret key the reply hands out (`key`); a client
that says hello again with it (after a reconnect) is the same caller, and nobody without
the key can be. A token: the principal it was issued to; a token
that is unknown or revoked is refused `unauthorized` and the socket closes (1008). Refused
hellos are budgeted per client address (`hello_failures`): past the budget a token is not
even checked (`over_budget`), so guessing tokens costs time. Every refusal leaves a trace
with the peer's address (server/trace.py).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

import trio

from protocol.envelope import PROTOCOL_VERSION, Hello, encode_result
from protocol.errors import ProtocolError
from server.auth import Principal

if TYPE_CHECKING:
    from server.session import Session

ANONYMOUS = "anonymous"  # anonymous callers are `anonymous~<digest of their key>`


def new_key() -> str:
    """A fresh anonymous key (128 random bits)."""
    return secrets.token_urlsafe(16)


def anonymous_name(key: str) -> str:
    """The identity an anonymous key stands for (a digest: names are stored in events)."""
    digest = hashlib.sha256(f"petridish-anonymous:{key}".encode()).hexdigest()
    return f"{ANONYMOUS}~{digest[:16]}"


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
            await session._refuse_now(hello.id, refusal)
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
    await session._send_now(encode_result(hello.id, reply))
    return True
