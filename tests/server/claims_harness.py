"""Test glue for server/claims.py in process, without a socket: the budget hook that
raises a refusal (`raise_refusal`), and a visitor's account at a live lab of an in-memory
directory (`lab_visit`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio

from actors.lab import WORLD
from actors.runtime import ActorKind, Call, Directory, RuntimeConfig, open_directory
from actors.store import MemoryEventStore
from protocol.errors import ProtocolError
from protocol.ops import lab as ops
from server.budgets import Account, Budgets, Ledger
from server.claims import Claims

VOTE = Call("lab.vote", ops.VoteArgs("p", "s-0000000000000000", "k"), "agent", "bob")
DEAL = Call("lab.public_pair", ops.PublicPairArgs(client_key="k"), "agent", "bob")


def raise_refusal(refusal: ProtocolError | None, _who: str) -> None:
    """`Claims`' budget hook: raise the refusal, as `admit` is answered."""
    if refusal is not None:
        raise refusal


@attrs.define
class Visit:
    """Visitor bob's account at a lab, and the parts that hold it to its budgets."""

    ledger: Ledger
    directory: Directory
    claims: Claims
    account: Account


@asynccontextmanager
async def lab_visit(budgets: Budgets, lab: str, mailbox_size: int = 1024
                    ) -> AsyncIterator[Visit]:
    """Visitor bob (an agent from 127.0.0.1) at `lab`, made by the owner and live: a
    request sent to it is posted to its mailbox (of `mailbox_size`) at once, and stays
    there until the test checkpoints."""
    ledger = Ledger(budgets)
    config = RuntimeConfig(mailbox_size=mailbox_size)
    async with open_directory(MemoryEventStore(), [ActorKind.of(WORLD)],
                              config=config) as directory:
        await directory.ask(lab, Call("lab.create", ops.CreateArgs(backlog=0), "owner",
                                      "owner:me"))
        await directory.get(lab)
        account = ledger.client_account("bob", "127.0.0.1", "agent", trio.current_time())
        assert account is not None
        yield Visit(ledger, directory, Claims(ledger, directory, raise_refusal), account)
