"""The worlds each client creates, held to its budget (`creates_per_hour`, `live_worlds`).

A create is any request with a kind's create op (`counter.create`, `field.start`, ...) or
`lobby.create`. Before it is sent, `admit` checks the caller's account (server/budgets.py)
and holds a place for it; the answer settles the `Ticket`: accepted, the world counts
against the account for the hour and while it is live; refused, the place is freed. The
owner creates without a budget. Counts live in memory: a restart forgets them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from server.budgets import Account, Ledger

if TYPE_CHECKING:
    from actors.runtime import Call, Directory

LOBBY_CREATE = "lobby.create"


class Ticket:
    """One create in flight, counted against its account until it is answered."""

    __slots__ = ("account", "target")

    def __init__(self, account: Account, target: str) -> None:
        self.account = account
        self.target = target
        account.pending += 1

    def settle(self, created: bool) -> None:
        """The create was answered: accepted (`created`) or refused."""
        self.account.pending -= 1
        if created:
            self.account.creations.append(trio.current_time())
            self.account.created.add(self.target)


class Creations:
    """Which calls create worlds, and the check of their budget."""

    def __init__(self, ledger: Ledger, directory: Directory,
                 budget_hit: Any) -> None:
        self.ledger = ledger
        self.directory = directory
        self.budget_hit = budget_hit  # (refusal, who) -> None: counted, logged
        self.create_ops = {k.create_op for k in directory.kinds.values() if k.create_op}

    def target(self, call: Call, to: str) -> str | None:
        """The world `call` would create, or None when it creates none."""
        if call.op == LOBBY_CREATE:
            return f"{call.args.kind}:{call.args.name}"
        return to if call.op in self.create_ops else None

    def admit(self, account: Account | None, who: str, call: Call, to: str) -> Ticket | None:
        """A ticket for a create by `account` (ProtocolError `over_budget` when its budget is
        spent), or None when `call` creates nothing or the caller has no budget."""
        target = self.target(call, to)
        if target is None or account is None:
            return None
        alive = {i for i in account.created if self.directory.alive(i) is not None}
        account.created = alive  # worlds that unloaded no longer count
        refusal = self.ledger.may_create(account, alive, trio.current_time())
        if refusal is not None:
            self.budget_hit(refusal, who)
            raise refusal
        return Ticket(account, target)
