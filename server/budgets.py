"""Budgets: everything a client can make the server hold or compute, bounded per client.

`Budgets` holds the limits (the defaults are what `petridish serve` enforces; every one is
documented in docs/operations.md and the protocol's in docs/protocol.md). `Ledger` keeps
what each client has spent: per client address (connections, connections that have not
said hello, refused hellos, HTTP requests) and per account (CPU time of its requests,
its requests and subscribes in flight, worlds it created, players it seated, worlds it is
loading, its lab ops: server/claims.py, bytes its requests stored), each kept while
anything of it is still counted (`Account.idle`). An account is a token's name for token
holders and the client address for anonymous callers, so a second connection or an
anonymous identity per connection (or per MCP call) buys no more; the owner spends no
budget. A budget spent is refused with
`over_budget` naming it (`detail.budget`, `detail.limit`, and `detail.retry_after` when it
refills), counted in `/metrics` and logged (server/trace.py); `hits` keeps who hit which
budget lately for the owner's console. `max_live_worlds` is held by the directory, which
loads the worlds (actors/runtime/directory.py), rather than by the ledger; an anonymous
account's `footprint` (the worlds it follows) tells it which followed worlds may go.

A bound shared by every address (`max_ungreeted` here, `max_connections` in
server/tcp_guard.py) is kept by `Holders` (server/shedding.py).

Numbers are plain; time is passed in (trio's clock in seconds), so tests need no sleeping.
"""

from __future__ import annotations

import ipaddress
import math
from collections import OrderedDict, deque
from typing import Protocol

import attrs

from protocol.errors import ProtocolError, over_budget
from server.shedding import Holders, Shed

HOUR = 3600.0  # seconds: the window of the hourly budgets
MAX_ENTRIES = 100_000  # addresses and accounts remembered; the oldest idle ones go first
HITS_KEPT = 200  # (budget, who) pairs the console lists


@attrs.frozen
class Budgets:
    """The limits every client is held to."""

    # TCP connections at once, all addresses together (past it, as max_ungreeted); `serve`
    # lowers it to what the process's descriptor limit allows (server/descriptors.py).
    max_connections: int = 10_000
    connections_per_address: int = 64  # TCP (and websocket) connections at once per address
    handshake_timeout: float = 5.0  # seconds a TCP connection may take to send its request
    # Websocket connections that have not said hello, together: past it, the oldest of the
    # address holding the most goes if it holds more than the newcomer's would, else the
    # newcomer is refused.
    max_ungreeted: int = 512
    ungreeted_per_address: int = 16  # ... and from one address
    hello_failures: int = 10  # refused hellos an address may make in a burst ...
    hello_failure_rate: float = 0.2  # ... refilled at this many per second
    http_rate: float = 20.0  # HTTP requests per second from one address (pages, /metrics) ...
    http_burst: int = 120  # ... and at once (a page and its scripts, several times over)
    subscriptions: int = 64  # topics one connection may follow at once
    # Worlds one account may follow at once over all its connections: a world a token
    # holder follows stays live (never unloaded to make room), so this bounds what one
    # client can pin of max_live_worlds (an anonymous client's may go: Account.footprint).
    worlds_followed: int = 64
    send_timeout: float = 15.0  # a frame (front.SEND_SLICE of an HTTP answer) not taken: dropped
    cpu_rate: float = 0.05  # seconds of server time per second, an anonymous client ...
    cpu_rate_agent: float = 0.25  # ... and an agent token
    cpu_burst: float = 1.0  # seconds of server time an agent's account may spend at once
    cpu_burst_anonymous: float = 0.25  # ... and an anonymous client's (a page's load)
    # An account past its CPU budget is refused only while the others use at least this
    # much server time per second: alone on the server, a client may use all of it.
    cpu_contended: float = 0.002
    creates_per_hour: int = 20  # worlds an account may create in any hour ...
    live_worlds: int = 10  # ... and have live (loaded) at once
    joins_per_hour: int = 30  # players (a field's agents) an account may seat in any hour
    # Requests and subscribes an agent's account may have in flight at once over all its
    # connections (MCP calls and lab routes too), each held until its world is done with
    # it, a timed-out one too: this bounds a burst's server time (charged once done) and
    # the work queued at the worlds ...
    inflight_per_account: int = 128
    inflight_anonymous: int = 64  # ... and a spectator's (by role, as cpu_burst_anonymous)
    # Stored worlds an account's requests and subscribes may be loading at once (each
    # load's time is charged to it, but only once done: this bounds a burst's).
    loads_at_once: int = 8
    # Worlds live in the process, all accounts together (each stays in memory until its
    # idle unload): a load or create past it first unloads the least recently used world
    # that nobody follows and nothing waits on, else one that only anonymous spectators
    # follow, those following the most first (actors/runtime/directory.py).
    max_live_worlds: int = 500
    # Visitors' lab ops per account (server/claims.py `PACED`): crosses offered in any hour
    # (each child is compiled by glslang and kept in the lab's pool for good) ...
    crosses_per_hour: int = 20
    # ... and public pairs dealt and votes cast: a bucket of this many, refilled over the
    # hour (a judge deals and votes about one pair every few seconds at most).
    deals_per_hour: int = 1_800
    votes_per_hour: int = 1_800
    # Bytes of events an agent's accepted requests may append to the store: a bucket of
    # this many refilled over the hour (server/stored.py) ...
    stored_per_hour: int = 128 * 2**20
    stored_anonymous: int = 4 * 2**20  # ... and a spectator's (by role, as inflight_anonymous)

    def to_json(self) -> dict[str, float]:
        """Every limit by name (the console shows them)."""
        return attrs.asdict(self)


def address_key(host: str) -> str:
    """The budget key of a client address: IPv4 as is, IPv6 by its /64 network (one
    client holds a whole /64), anything else (a Unix socket) as given."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class Rate:
    """An exponentially decaying average of seconds spent per second (time constant TAU)."""

    __slots__ = ("at", "value")
    TAU = 1.0

    def __init__(self, now: float) -> None:
        self.value, self.at = 0.0, now

    def read(self, now: float) -> float:
        """The average at `now`."""
        if now > self.at:
            self.value *= math.exp((self.at - now) / self.TAU)
            self.at = now
        return self.value

    def add(self, seconds: float, now: float) -> None:
        """`seconds` were spent at `now`."""
        self.read(now)
        self.value += seconds / self.TAU


class Bucket:
    """A token bucket over floats that may run into debt (CPU is charged after the fact)."""

    __slots__ = ("at", "burst", "level", "rate")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst, self.level, self.at = rate, burst, burst, now

    def refill(self, now: float) -> float:
        """The level at `now`."""
        if now > self.at:
            self.level = min(self.burst, self.level + (now - self.at) * self.rate)
            self.at = now
        return self.level

    def wait(self, now: float, need: float = 0.0) -> float:
        """Seconds until the level exceeds `need` (0 when it does now)."""
        level = self.refill(now)
        return 0.0 if level > need else (need - level) / self.rate + 1e-3

    def full(self, now: float) -> bool:
        """True when nothing is spent (the entry may be forgotten)."""
        return self.refill(now) >= self.burst


class Address:
    """What one client address holds: connections, greeted or not, refused hellos and its
    HTTP requests."""

    __slots__ = ("connections", "hellos", "http", "ungreeted")

    def __init__(self, budgets: Budgets, now: float) -> None:
        self.connections = 0
        self.ungreeted = 0
        self.hellos = Bucket(budgets.hello_failure_rate, budgets.hello_failures, now)
        self.http = Bucket(budgets.http_rate, budgets.http_burst, now)

    def idle(self, now: float) -> bool:
        """No connection, nothing spent."""
        return not self.connections and self.hellos.full(now) and self.http.full(now)


class Hourly:
    """What an account did in the last hour (when each came) and has in flight."""

    __slots__ = ("pending", "times")

    def __init__(self) -> None:
        self.times: deque[float] = deque()
        self.pending = 0

    def count(self, now: float) -> int:
        """Those of the last hour and those in flight (forgets the older ones)."""
        while self.times and self.times[0] <= now - HOUR:
            self.times.popleft()
        return len(self.times) + self.pending

    def start(self) -> None:
        """One more is in flight."""
        self.pending += 1

    def settle(self, done: bool, now: float) -> None:
        """One in flight was answered: `done` (it counts for the hour) or refused."""
        self.pending -= 1
        if done:
            self.times.append(now)


class Held(Protocol):
    """A request or subscribe in flight (server/claims.py `Ticket`)."""

    to: str | None  # the world it was sent to

    def settle(self, done: bool) -> None:
        """Its world is done with it (once; again: nothing)."""


class Account:
    """What one account spent: CPU time, its requests in flight, the worlds it created,
    the players it seated, the worlds being loaded for it, its visitors' lab ops, the bytes
    its requests stored."""

    __slots__ = ("anonymous", "cpu", "created", "creates", "followed", "joins", "loading",
                 "paced", "recent", "sessions", "spectator", "stored", "tickets")

    def __init__(self, spectator: bool, budgets: Budgets, now: float) -> None:
        self.anonymous = False  # an address's: a client without a token
        self.spectator = spectator  # its role's budgets are a spectator's (the lower)
        b = budgets
        self.cpu = (Bucket(b.cpu_rate, b.cpu_burst_anonymous, now) if spectator
                    else Bucket(b.cpu_rate_agent, b.cpu_burst, now))
        self.recent = Rate(now)  # its server time per second, lately
        self.creates = Hourly()  # worlds it created
        self.created: set[str] = set()  # world ids it created (live or not)
        self.joins = Hourly()  # players it seated (joins)
        self.loading = 0  # its requests and subscribes naming a world not live here
        self.followed: dict[str, int] = {}  # world id -> its subscriptions to it
        # Its websocket sessions open: while one is, the account is kept (a session holds
        # it from its hello on), so a second connection shares what the first spent.
        self.sessions = 0
        stored = b.stored_anonymous if spectator else b.stored_per_hour
        self.stored = Bucket(stored / HOUR, stored, now)  # bytes it may store (server/stored.py)
        # Its requests and subscribes its worlds are not done with, each to when it was
        # issued (oldest first; `Ledger.sweep` frees those held past the backstop) ...
        self.tickets: dict[Held, float] = {}
        # ... and what its lab ops spent, by budget (server/claims.py PACED; made on first use).
        self.paced: dict[str, Hourly | Bucket] = {}

    @property
    def inflight(self) -> int:
        """Its requests and subscribes in flight."""
        return len(self.tickets)

    def idle(self, now: float) -> bool:
        """Nothing spent that is still counted."""
        return (self.cpu.full(now) and self.stored.full(now) and not self.creates.count(now)
                and not self.joins.count(now) and not self.loading and not self.tickets
                and not self.sessions
                and all(not r.count(now) if isinstance(r, Hourly) else r.full(now)
                        for r in self.paced.values()))

    @property
    def footprint(self) -> int | None:
        """How firmly the worlds it follows are held live (`SubscriberQueue.footprint`): a
        token holder's are (None); an anonymous client's may be unloaded to make room, the
        worlds followed by those who follow most first (the number it follows)."""
        return len(self.followed) if self.anonymous else None


@attrs.define
class Hit:
    """A budget someone hit: how often, and when last (seconds, trio's clock)."""

    budget: str
    who: str
    count: int
    last: float


class Ledger:
    """What every client address and account has spent (see the module doc)."""

    def __init__(self, budgets: Budgets) -> None:
        self.budgets = budgets
        self.addresses: OrderedDict[str, Address] = OrderedDict()
        self.accounts: OrderedDict[str, Account] = OrderedDict()
        self.hits: OrderedDict[tuple[str, str], Hit] = OrderedDict()
        self.ungreeted = 0
        self.waiting = Holders()  # the connections without a hello (those that can be shed)
        self.load = Rate(0.0)  # every client's server time per second, lately

    # ---- entries ----------------------------------------------------------------------

    def address(self, key: str, now: float) -> Address:
        """The entry of address `key` (made on first use)."""
        entry = self.addresses.get(key)
        if entry is None:
            entry = self.addresses[key] = Address(self.budgets, now)
            self._trim(self.addresses, now)
        return entry

    def account(self, name: str, role: str, now: float) -> Account:
        """The entry of account `name` (made on first use, with its role's CPU rate and
        requests in flight)."""
        entry = self.accounts.get(name)
        if entry is None:
            entry = self.accounts[name] = Account(role == "spectator", self.budgets, now)
            self._trim(self.accounts, now)
        return entry

    def client_account(self, token_name: str | None, address: str, role: str,
                       now: float) -> Account | None:
        """The account a client's server time is charged to (a websocket session's, an
        MCP call's, a lab route's): its token's, or its address's when it has no token
        (`token_name` None); None for the owner, who has no budget."""
        if role == "owner":
            return None
        if token_name is not None:
            return self.account(token_name, role, now)
        account = self.account(f"address:{address}", role, now)
        account.anonymous = True
        return account

    @staticmethod
    def _trim(entries: OrderedDict, now: float) -> None:
        """Forget idle entries once there are too many (oldest first)."""
        if len(entries) <= MAX_ENTRIES:
            return
        for key in [k for k, e in entries.items() if e.idle(now)][:len(entries) - MAX_ENTRIES]:
            del entries[key]

    def sweep(self, now: float, before: float = -math.inf) -> dict[str, list[Held]]:
        """Forget every idle entry (run every few seconds), first freeing (settling as
        refused) the requests in flight issued before the time `before` (the backstop:
        server/claims.py BACKSTOP); returns those freed, by account."""
        freed: dict[str, list[Held]] = {}
        for name, account in self.accounts.items():
            for ticket, issued in account.tickets.items():  # (oldest first)
                if issued >= before:
                    break
                freed.setdefault(name, []).append(ticket)
        for tickets in freed.values():
            for ticket in tickets:
                ticket.settle(False)
        for entries in (self.addresses, self.accounts):
            for key in [k for k, e in entries.items() if e.idle(now)]:
                del entries[key]
        return freed

    def inflight(self) -> int:
        """Requests and subscribes in flight, all accounts together."""
        return sum(len(account.tickets) for account in self.accounts.values())

    def hit(self, budget: str, who: str, now: float) -> Hit:
        """Record that `who` hit `budget` (the console lists the latest HITS_KEPT)."""
        entry = self.hits.pop((budget, who), None) or Hit(budget, who, 0, now)
        entry.count += 1
        entry.last = now
        self.hits[(budget, who)] = entry
        while len(self.hits) > HITS_KEPT:
            self.hits.popitem(last=False)
        return entry

    # ---- connections ------------------------------------------------------------------

    def connect(self, key: str, now: float, conn: Shed | None = None) -> None:
        """Admit a websocket connection `conn` from `key` that has not said hello yet. At
        `max_ungreeted`, the oldest such connection of the address holding the most is shed
        for it when that address holds more than `key` would with it, else it is refused."""
        b = self.budgets
        entry = self.address(key, now)
        if entry.connections >= b.connections_per_address:
            raise over_budget("connections_per_address", f"more than "
                              f"{b.connections_per_address} connections from one address",
                              b.connections_per_address)
        if entry.ungreeted >= b.ungreeted_per_address:
            raise over_budget("ungreeted_per_address", f"more than {b.ungreeted_per_address} "
                              "connections from one address have not said hello yet",
                              b.ungreeted_per_address)
        if self.ungreeted >= b.max_ungreeted and not self._shed(entry.ungreeted + 1, now):
            raise over_budget("max_ungreeted", f"more than {b.max_ungreeted} connections "
                              "have not said hello yet; retry in a moment", b.max_ungreeted)
        entry.connections += 1
        entry.ungreeted += 1
        self.ungreeted += 1
        if conn is not None:
            self.waiting.add(key, conn)

    def _shed(self, above: int, now: float) -> bool:
        """Let go the oldest connection without a hello of the address holding the most,
        if it holds more than `above`; True if one went (its place is free now)."""
        victim = self.waiting.heaviest(above)
        if victim is None:
            return False
        key, conn = victim
        self.greeted(key, now, conn)
        b = self.budgets
        conn.shed(over_budget("max_ungreeted", f"more than {b.max_ungreeted} connections "
                              "have not said hello yet, and this address holds the most of "
                              "them; its oldest is closed", b.max_ungreeted))
        return True

    def greeted(self, key: str, now: float, conn: Shed | None = None) -> None:
        """`conn` from `key` no longer counts as a connection without a hello (once): it
        said a good hello, ended, or was shed."""
        if conn is None or self.waiting.remove(key, conn):
            self.address(key, now).ungreeted -= 1
            self.ungreeted -= 1

    def disconnect(self, key: str, greeted: bool, now: float, conn: Shed | None = None) -> None:
        """A connection admitted by `connect` ended."""
        self.address(key, now).connections -= 1
        if not greeted:
            self.greeted(key, now, conn)

    def may_hello(self, key: str, now: float) -> ProtocolError | None:
        """Why `key` may not try a token now (its refused hellos are spent), or None."""
        bucket = self.address(key, now).hellos
        if bucket.refill(now) >= 1:
            return None
        b = self.budgets
        return over_budget("hello_failures", f"more than {b.hello_failures} refused hellos "
                           "from this address; wait before trying a token again",
                           b.hello_failures, bucket.wait(now, 1.0))

    def hello_refused(self, key: str, now: float) -> None:
        """A hello from `key` was refused (a bad token)."""
        bucket = self.address(key, now).hellos
        bucket.refill(now)
        bucket.level -= 1

    def may_request(self, key: str, now: float) -> ProtocolError | None:
        """Spend one of `key`'s HTTP requests, or say why not (`http_rate`)."""
        bucket = self.address(key, now).http
        if bucket.refill(now) >= 1:
            bucket.level -= 1
            return None
        rate = self.budgets.http_rate
        return over_budget("http_rate", f"more than {rate:g} HTTP requests per second from "
                           "this address; slow down", rate, bucket.wait(now, 1.0))

    # ---- CPU ----------------------------------------------------------------------------

    def may_compute(self, account: Account | None, now: float) -> ProtocolError | None:
        """Why `account` may not ask for work now, or None: refused when its CPU time is
        spent (its debt not paid back) while other clients use the server
        (`cpu_contended`)."""
        if account is None:
            return None
        wait = account.cpu.wait(now)
        if not wait or not self._contended(account, now):
            return None  # nobody else to protect: the debt waits for them
        rate = account.cpu.rate
        return over_budget("cpu", f"this client used more than {rate:g} s of server time per "
                           "second while others wait; slow down", rate, wait)

    def charge(self, account: Account | None, seconds: float, now: float) -> None:
        """`account` (None: the owner) spent `seconds` of server time. Time spent while
        others use the server is owed in full (the debt has no floor: it is paid back at
        the account's rate before it is served again while they do); time spent alone on
        the server is owed at most down to one burst's debt."""
        if account is not None:
            bucket = account.cpu
            floor = min(bucket.refill(now), -bucket.burst)
            bucket.level -= seconds
            if not self._contended(account, now):
                bucket.level = max(bucket.level, floor)
            account.recent.add(seconds, now)
        self.load.add(seconds, now)

    def _contended(self, account: Account, now: float) -> bool:
        """True while clients other than `account` use the server (`cpu_contended`)."""
        others = self.load.read(now) - account.recent.read(now)
        return others >= self.budgets.cpu_contended

    # ---- creations and joins -------------------------------------------------------------

    def may_create(self, account: Account | None, alive: set[str], now: float,
                   idle: float | None = None) -> ProtocolError | None:
        """Why `account` may not create a world now, or None. `alive` is the ids of the
        worlds it created that are live now; `idle` the seconds after which a world with no
        message and no subscriber unloads (None: never)."""
        if account is None:
            return None
        b = self.budgets
        refusal = _per_hour("creates_per_hour", account.creates, b.creates_per_hour,
                            "worlds created", now)
        if refusal is None and len(alive) + account.creates.pending >= b.live_worlds:
            when = "" if idle is None else (f" (a world unloads after {idle:g} s with no "
                                            "request and no subscriber)")
            return over_budget("live_worlds", f"more than {b.live_worlds} live worlds "
                               f"created by this client; wait until some unload{when}",
                               b.live_worlds)
        return refusal

    def may_send(self, account: Account) -> ProtocolError | None:
        """Why `account` may not have one more request or subscribe in flight, or None."""
        b = self.budgets
        budget, limit = (("inflight_anonymous", b.inflight_anonymous) if account.spectator
                         else ("inflight_per_account", b.inflight_per_account))
        if account.inflight < limit:
            return None
        return over_budget(budget, f"more than {limit} requests of this client are in flight "
                           "(over all its connections); retry when one is answered", limit)

    def may_load(self, account: Account) -> ProtocolError | None:
        """Why `account` may not have one more world loaded for it now, or None."""
        limit = self.budgets.loads_at_once
        if account.loading < limit:
            return None
        return over_budget("loads_at_once", f"more than {limit} worlds not live are being "
                           "loaded for this client at once; retry when one is answered",
                           limit)

    def follow(self, account: Account | None, world: str) -> ProtocolError | None:
        """Count one more subscription of `account` to `world` (give it back with
        `unfollow`), or say why not: a world it does not follow yet past
        `worlds_followed`."""
        if account is None:
            return None
        limit = self.budgets.worlds_followed
        if world not in account.followed and len(account.followed) >= limit:
            return over_budget("worlds_followed", f"this client follows {limit} worlds "
                               "already (over all its connections); unsubscribe one first",
                               limit)
        account.followed[world] = account.followed.get(world, 0) + 1
        return None

    def unfollow(self, account: Account | None, world: str) -> None:
        """One subscription of `account` to `world` ended (or was refused)."""
        if account is not None and world in account.followed:
            account.followed[world] -= 1
            if not account.followed[world]:
                del account.followed[world]

    def may_join(self, account: Account | None, now: float) -> ProtocolError | None:
        """Why `account` may not seat another player now, or None."""
        if account is None:
            return None
        return _per_hour("joins_per_hour", account.joins, self.budgets.joins_per_hour,
                         "joins", now)

    # ---- a lab's visitors (server/claims.py PACED) ----------------------------------------

    def may_pace(self, budget: str, spent: Hourly | Bucket, what: str, now: float
                 ) -> ProtocolError | None:
        """Why an account may not do one more `what` now under its hourly `budget` (a
        `Budgets` field), or None. `spent` is its record: an `Hourly` (the caller starts and
        settles the one in flight, as for creates), or a `Bucket` of the hour's budget
        refilled over the hour, spent here."""
        limit = getattr(self.budgets, budget)
        if isinstance(spent, Hourly):
            return _per_hour(budget, spent, limit, what, now)
        if spent.refill(now) >= 1:
            spent.level -= 1
            return None
        return over_budget(budget, f"more than {limit} {what} an hour", limit,
                           spent.wait(now, 1.0) if spent.rate > 0 else None)


def _per_hour(budget: str, spent: Hourly, limit: int, what: str, now: float
              ) -> ProtocolError | None:
    """The refusal of an hourly budget that `spent` has used up, or None."""
    if spent.count(now) < limit:
        return None
    wait = spent.times[0] + HOUR - now if spent.times else 60.0
    return over_budget(budget, f"more than {limit} {what} in an hour", limit, wait)
