"""What each client claims, held to its budget: worlds it creates (`creates_per_hour`,
`live_worlds`) and players it seats (`joins_per_hour`).

A create is any request with a kind's create op (`counter.create`, `field.start`, ...) or
`lobby.create`; a join is one with a kind's seat op (`field.join`: each seats an agent on
a tile of the field, which has only so many). Before it is sent, `admit` checks the
caller's account (server/budgets.py) and holds a place for it, so the world never sees a
call past the budget; the answer settles the `Ticket`: accepted, it counts against the
account for the hour (a world, also while it is live); refused, the place is freed. The
owner has no such budget. Counts live in memory: a restart forgets them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from server.budgets import Account, Hourly, Ledger

if TYPE_CHECKING:
    from actors.runtime import Call, Directory

LOBBY_CREATE = "lobby.create"


class Ticket:
    """One create or join in flight, counted against its account until it is answered."""

    __slots__ = ("account", "spent", "world")

    def __init__(self, account: Account, spent: Hourly, world: str | None) -> None:
        self.account = account
        self.spent = spent  # the account's creates or joins
        self.world = world  # the world a create makes (None: a join)
        spent.start()

    def settle(self, done: bool) -> None:
        """The call was answered: accepted (`done`) or refused."""
        self.spent.settle(done, trio.current_time())
        if done and self.world is not None:
            self.account.created.add(self.world)


class Claims:
    """Which calls create worlds or seat players, and the check of their budgets."""

    def __init__(self, ledger: Ledger, directory: Directory,
                 budget_hit: Any) -> None:
        self.ledger = ledger
        self.directory = directory
        self.budget_hit = budget_hit  # (refusal, who) -> None: counted, logged
        kinds = directory.kinds.values()
        self.create_ops = {k.create_op for k in kinds if k.create_op}
        self.seat_ops = {k.seat_op for k in kinds if k.seat_op}

    def target(self, call: Call, to: str) -> str | None:
        """The world `call` would create, or None when it creates none."""
        if call.op == LOBBY_CREATE:
            return f"{call.args.kind}:{call.args.name}"
        return to if call.op in self.create_ops else None

    def admit(self, account: Account | None, who: str, call: Call, to: str) -> Ticket | None:
        """A ticket for a create or join by `account` (ProtocolError `over_budget` when its
        budget is spent), or None when `call` is neither or the caller has no budget."""
        if account is None:
            return None
        now = trio.current_time()
        target = self.target(call, to)
        if target is not None:
            alive = {i for i in account.created if self.directory.alive(i) is not None}
            account.created = alive  # worlds that unloaded no longer count
            refusal = self.ledger.may_create(account, alive, now)
            spent = account.creates
        elif call.op in self.seat_ops:
            refusal = self.ledger.may_join(account, now)
            spent = account.joins
        else:
            return None
        if refusal is not None:
            self.budget_hit(refusal, who)
            raise refusal
        return Ticket(account, spent, target)
