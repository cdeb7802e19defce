"""What each client claims, held to its budget: requests and subscribes in flight
(`inflight_per_account`, `inflight_anonymous`), worlds it creates (`creates_per_hour`,
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
budget. A request's ticket is settled by its world's answer (a timeout answers the client
sooner, but the ticket waits for the world: what a client has queued at the worlds stays
counted), a subscribe's once it is answered or timed out (its world drops a subscribe
whose asker gave up): an accepted create or join counts against the account for the hour
(a world, also while it is live); a refused one, a load and the place in flight are
freed. The owner has no such budget. Counts live in memory: a restart forgets them.

A visitor's lab op is held to its account's hourly budget too (`PACED`): a cross (a
child compiled by glslang off the lab's task and kept in its pool for good) as a create
is, counted once accepted; a public pair dealt (held in the lab's memory for up to twenty
minutes) and a vote (a stored event) are spent when let through, whatever the lab
answers, from a bucket of the hour's budget refilled over the hour, and given back when
the lab never had the request: refused not `delivered` (`ProtocolError.delivered`: by the
directory, by the lab's mailbox, full or closed with the request still in it, by the
cluster's process hosting the lab, or forwarded and out of time before it was sent), or,
for an MCP call or a lab route (`Charged.close`), its delivery raised. Kept spent: any
refusal the lab made, the server's own failure (`internal`: whether the lab had it is
unknown), and, once a link broke after carrying a forwarded request, any refusal after
(it may have been applied where it went: `outcome: "unknown"`). These records are kept
on the account (`Account.paced`), forgotten with it once unspent.

A request that may write (its op is no read of its kind) is refused too while its
account's bytes stored (`stored_per_hour`) are spent: server/stored.py.

A backstop frees a ticket its world has not settled `BACKSTOP` ask timeouts after it was
issued (the ledger's sweep, every few seconds: `Ledger.sweep`), settled as refused, with a
trace (`unsettled`): every path answers today, but one that dropped an ask would otherwise
hold its place until a restart, and enough such would have the account refused everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from server.budgets import HOUR, Account, Bucket, Hourly, Ledger
from server.stored import charge_stored, may_store

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
# Ask timeouts after which a ticket its world has not settled is freed (5 minutes at the
# default 10 s): far past any answer a working world gives (a load, a compile, a re-home
# take seconds), so only an ask some path dropped, or offloaded work queued that long
# behind the one offload thread, gets there; and a place freed too soon would only let its
# client queue a little more at a stuck world.
BACKSTOP = 30


class Ticket:
    """One request or subscribe in flight (and the create, join or load it may be),
    counted against its account until its world is done with it."""

    __slots__ = ("account", "loading", "paid", "spent", "to", "world")

    def __init__(self, account: Account, spent: Hourly | None, world: str | None,
                 loading: bool, to: str | None = None) -> None:
        self.account: Account | None = account
        self.spent = spent  # the account's creates or joins (None: neither)
        self.world = world  # the world a create makes (None: not a create)
        self.loading = loading
        self.to = to  # the world it was sent to (the backstop's trace names it)
        self.paid: Bucket | None = None  # the bucket a deal or vote was spent from
        if spent is not None:
            spent.start()
        account.loading += loading
        account.tickets[self] = trio.current_time()

    def settle(self, done: bool, delivered: bool = True) -> None:
        """The call was answered: accepted (`done`) or refused (once; again: nothing). A
        call its world never had (not `delivered`) gives back the deal or vote it spent."""
        account, self.account = self.account, None
        if account is None:
            return
        if self.paid is not None and not delivered:
            self.paid.level = min(self.paid.burst, self.paid.level + 1)
        del account.tickets[self]
        account.loading -= self.loading
        if self.spent is not None:
            self.spent.settle(done, trio.current_time())
            if done and self.world is not None:
                account.created.add(self.world)

    def stored(self, nbytes: int) -> None:
        """Its call's events took `nbytes` in the store (told before its answer, so the
        account is still held): charged to `stored_per_hour` (server/stored.py)."""
        if self.account is not None:
            charge_stored(self.account, nbytes, trio.current_time())


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
        self.reads = frozenset().union(*(k.reads for k in kinds))  # (served past `stored`)

    def target(self, call: Call, to: str) -> str | None:
        """The world `call` would create, or None when it creates none."""
        if call.op == LOBBY_CREATE:
            return f"{call.args.kind}:{call.args.name}"
        return to if call.op in self.create_ops else None

    def admit(self, account: Account | None, who: str, call: Call, to: str) -> Ticket | None:
        """A ticket for `call` by `account` (ProtocolError `over_budget` when a budget of
        it is spent; a deal or a vote is spent here), or None when the caller has no
        budget."""
        if account is None:
            return None
        target = self.target(call, to)
        now = trio.current_time()
        spent, refusal, paced, paid = None, None, None, None
        if target is not None:  # (bounded by live_worlds: not a load)
            alive = {i for i in account.created if self.directory.alive(i) is not None}
            account.created = alive  # worlds that unloaded no longer count
            refusal = self.ledger.may_create(account, alive, now,
                                             self.directory.config.idle_timeout)
            spent = account.creates
        elif call.op in self.seat_ops:
            refusal = self.ledger.may_join(account, now)
            spent = account.joins
        elif (paced := PACED.get(call.op)) is not None:
            record = self._paced(account, paced[0], now)
            spent = record if isinstance(record, Hourly) else None
            paid = record if isinstance(record, Bucket) else None
        if refusal is None and call.op not in self.reads:
            refusal = may_store(self.ledger.budgets, account, now)
        try:
            ticket = self._issue(account, who, to, target is None and self._loads(to),
                                 refusal, spent, target, paced)
        finally:  # (raised, this frame is held by its traceback too: no cycle through it)
            refusal = None
        ticket.paid = paid
        return ticket

    def _paced(self, account: Account, budget: str, now: float) -> Hourly | Bucket:
        """`account`'s record of `budget` (made on first use)."""
        record = account.paced.get(budget)
        if record is None:
            limit = getattr(self.ledger.budgets, budget)
            record = account.paced[budget] = (Hourly() if budget == COUNTED_WHEN_DONE
                                              else Bucket(limit / HOUR, limit, now))
        return record

    def _loads(self, to: str) -> bool:
        """True when a message to `to` would load it here: not live, and no cluster (whose
        other processes may host it: that message is forwarded, not a load)."""
        return self.directory.placement is None and self.directory.alive(to) is None

    def load(self, account: Account | None, who: str, to: str) -> Ticket | None:
        """A ticket for a subscribe by `account` to world `to` (`over_budget` past its
        requests in flight, or past `loads_at_once` when `to` is not live here), or None
        for the owner."""
        if account is None:
            return None
        return self._issue(account, who, to, self._loads(to))

    def _issue(self, account: Account, who: str, to: str, loading: bool,
               refusal: ProtocolError | None = None, spent: Hourly | None = None,
               world: str | None = None, paced: tuple[str, str] | None = None) -> Ticket:
        """The ticket, or the first budget spent raised: its requests in flight, `refusal`
        (a create's or join's, or its bytes stored), its loads, then `paced` (a visitor's
        lab op's budget and what it counts: last, as a deal or a vote is spent only by a
        request let through)."""
        refusal = self.ledger.may_send(account) or refusal
        if refusal is None and loading:
            refusal = self.ledger.may_load(account)
        if refusal is None and paced is not None:
            budget, what = paced
            refusal = self.ledger.may_pace(budget, account.paced[budget], what,
                                           trio.current_time())
        try:
            self.refuse(refusal, who)
        finally:  # raised, it is held by its traceback's frames, this one among them
            refusal = None  # (a cycle: tests/server/test_cyclic_garbage.py)
        return Ticket(account, spent, world, loading, to)
