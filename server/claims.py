"""What each client claims, held to its budget: worlds it creates (`creates_per_hour`,
`live_worlds`), players it seats (`joins_per_hour`), worlds loaded for it
(`loads_at_once`), and what visitors make a lab hold (`PACED`: crosses, public pairs
dealt, votes).

A create is any request with a kind's create op (`counter.create`, `field.start`, ...) or
`lobby.create`; a join is one with a kind's seat op (`field.join`: each seats an agent on
a tile of the field, which has only so many); a load is any other request, or a
subscribe, naming a world that is not live here (the directory reads its stream and folds
it, charging the time to the caller, but only once done; counted in a single process
only: a cluster forwards the message to the process hosting the world). Before it is
sent, `admit` (or `load`, for a subscribe) checks the caller's account
(server/budgets.py) and holds a place for it, so the world never sees a call past the
budget; the answer settles the `Ticket`: an accepted create or join counts against the
account for the hour (a world, also while it is live); a refused one, and every load,
frees its place. The owner has no such budget. Counts live in memory: a restart forgets
them.

A visitor's lab op is held to its account's hourly budget too (`PACED`): a cross (a
child compiled by glslang off the lab's task and kept in its pool for good) as a create
is, counted once accepted; a public pair dealt (held in the lab's memory for ten
minutes) and a vote (a stored event) are spent when let through, whatever the lab
answers, from a bucket of the hour's budget refilled over the hour. These records are kept by account, the last
`MAX_ENTRIES` used (an older one is forgotten, so such a client starts afresh).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

import trio

from server.budgets import HOUR, MAX_ENTRIES, Account, Bucket, Hourly, Ledger

if TYPE_CHECKING:
    from collections.abc import Callable

    from actors.runtime import Call, Directory
    from protocol.errors import ProtocolError

LOBBY_CREATE = "lobby.create"
# A visitor's lab op -> (its hourly budget, a `Budgets` field; what it counts)
PACED = {"lab.cross": ("crosses_per_hour", "crosses"),
         "lab.public_pair": ("deals_per_hour", "public pairs dealt"),
         "lab.vote": ("votes_per_hour", "votes")}
COUNTED_WHEN_DONE = "crosses_per_hour"  # (an Hourly, as creates; the others are buckets)


class Ticket:
    """One create, join or load in flight, counted against its account until it is
    answered (a join may also be a load)."""

    __slots__ = ("account", "loading", "spent", "world")

    def __init__(self, account: Account, spent: Hourly | None, world: str | None,
                 loading: bool) -> None:
        self.account = account
        self.spent = spent  # the account's creates or joins (None: only a load)
        self.world = world  # the world a create makes (None: a join or a load)
        self.loading = loading
        if spent is not None:
            spent.start()
        account.loading += loading

    def settle(self, done: bool) -> None:
        """The call was answered: accepted (`done`) or refused (once; again: nothing)."""
        self.account.loading -= self.loading
        self.loading = False
        if self.spent is not None:
            self.spent.settle(done, trio.current_time())
            self.spent = None
            if done and self.world is not None:
                self.account.created.add(self.world)


class Claims:
    """Which calls create worlds or seat players, and the check of their budgets."""

    def __init__(self, ledger: Ledger, directory: Directory,
                 refuse: Callable[[ProtocolError | None, str], None]) -> None:
        self.ledger = ledger
        self.directory = directory
        self.refuse = refuse  # (refusal, who): raised, counted and logged (ServerState)
        kinds = directory.kinds.values()
        self.create_ops = {k.create_op for k in kinds if k.create_op}
        self.seat_ops = {k.seat_op for k in kinds if k.seat_op}
        self.paced: OrderedDict[tuple[str, str], Hourly | Bucket] = OrderedDict()

    def target(self, call: Call, to: str) -> str | None:
        """The world `call` would create, or None when it creates none."""
        if call.op == LOBBY_CREATE:
            return f"{call.args.kind}:{call.args.name}"
        return to if call.op in self.create_ops else None

    def admit(self, account: Account | None, who: str, call: Call, to: str) -> Ticket | None:
        """A ticket for a create, join, cross or load by `account` (ProtocolError
        `over_budget` when its budget is spent; a deal or a vote is spent here), or None
        when `call` is none of them or the caller has no budget."""
        if account is None:
            return None
        target = self.target(call, to)
        seat = target is None and call.op in self.seat_ops
        paced = PACED.get(call.op) if target is None else None
        loading = target is None and self._loads(to)
        if target is None and not seat and paced is None and not loading:
            return None  # most requests: to a live world, neither a create nor a join
        now = trio.current_time()
        spent, refusal = None, None
        if target is not None:  # (bounded by live_worlds: not a load)
            alive = {i for i in account.created if self.directory.alive(i) is not None}
            account.created = alive  # worlds that unloaded no longer count
            refusal = self.ledger.may_create(account, alive, now,
                                             self.directory.config.idle_timeout)
            spent = account.creates
        elif seat:
            refusal = self.ledger.may_join(account, now)
            spent = account.joins
        elif paced is not None:
            budget, what = paced
            record = self._paced(budget, who, now)
            refusal = self.ledger.may_pace(budget, record, what, now)
            spent = record if isinstance(record, Hourly) else None
        if refusal is None and loading:
            refusal = self.ledger.may_load(account)
        try:
            self.refuse(refusal, who)
        finally:  # raised, it is held by its traceback's frames, this one among them
            refusal = None  # (a cycle: tests/server/test_cyclic_garbage.py)
        return Ticket(account, spent, target, loading) if spent is not None or loading else None

    def _paced(self, budget: str, who: str, now: float) -> Hourly | Bucket:
        """`who`'s record of `budget` (made on first use; the least recently used past
        MAX_ENTRIES forgotten)."""
        record = self.paced.pop((budget, who), None)
        if record is None:
            limit = getattr(self.ledger.budgets, budget)
            record = (Hourly() if budget == COUNTED_WHEN_DONE
                      else Bucket(limit / HOUR, limit, now))
        self.paced[(budget, who)] = record
        while len(self.paced) > MAX_ENTRIES:
            self.paced.popitem(last=False)
        return record

    def _loads(self, to: str) -> bool:
        """True when a message to `to` would load it here: not live, and no cluster (whose
        other processes may host it: that message is forwarded, not a load)."""
        return self.directory.placement is None and self.directory.alive(to) is None

    def load(self, account: Account | None, who: str, to: str) -> Ticket | None:
        """A ticket for a subscribe by `account` to world `to`: a load when it is not live
        here (`over_budget` past `loads_at_once`), else None, as for the owner."""
        if account is None or not self._loads(to):
            return None
        self.refuse(self.ledger.may_load(account), who)
        return Ticket(account, None, None, True)
