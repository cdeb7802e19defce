"""What one connection follows: its topics, and what they count against the budgets of
its client (`subscriptions` per connection, `worlds_followed` per account: a world a token
holder follows is never unloaded to make room, so one client must not pin them all; an
anonymous client's count is its `Account.footprint`, which lets the directory unload the
worlds only such clients follow, theirs who follow most first)."""

from __future__ import annotations

from collections import deque

import trio

from actors.runtime import ActorRef
from actors.runtime.subscriber import SubscriberQueue
from protocol.errors import ProtocolError, over_budget
from server.budgets import Account, Ledger


class Following:
    """A connection's topics (world id -> its reference) and its subscribes in flight."""

    def __init__(self, ledger: Ledger, cap: int) -> None:
        self.ledger = ledger
        self.cap = cap  # topics the connection may follow at once
        self.topics: dict[str, ActorRef] = {}
        self.subscribing = 0  # subscribes admitted, not yet settled
        self.lines: dict[str, deque[trio.Event]] = {}  # topics with a (un)subscribe under way

    def busy(self, to: str) -> bool:
        """True while a subscribe or unsubscribe of `to` is under way (`line_up`)."""
        return to in self.lines

    def line_up(self, to: str) -> trio.Event:
        """A place in `to`'s line, taken now (when the frame is read): the subscribes and
        unsubscribes of one topic take effect one at a time, in the order the client sent
        them (an unsubscribe sent while its subscribe loads the world is answered after
        it, and undoes it). Its turn has come when the event is set; `leave` it after."""
        turn = trio.Event()
        line = self.lines.setdefault(to, deque())
        line.append(turn)
        if len(line) == 1:
            turn.set()
        return turn

    def leave(self, to: str, turn: trio.Event) -> None:
        """Give up `turn` (done, or cancelled while waiting): the next in line goes."""
        line = self.lines[to]
        first = line[0] is turn
        line.remove(turn)
        if not line:
            del self.lines[to]
        elif first:
            line[0].set()

    def admit(self, account: Account | None, to: str) -> ProtocolError | None:
        """Why a subscribe to `to` is refused, or None: it then counts until `settle`."""
        if to not in self.topics and len(self.topics) + self.subscribing >= self.cap:
            return over_budget("subscriptions", f"a connection follows at most {self.cap} "
                               "topics; unsubscribe one first", self.cap)
        refusal = self.ledger.follow(account, to)
        if refusal is None:
            self.subscribing += 1
        return refusal

    def settle(self, account: Account | None, to: str, ref: ActorRef | None) -> None:
        """An admitted subscribe to `to` ended: followed through `ref`, or not (None)."""
        self.subscribing -= 1
        if ref is None or self.topics.setdefault(to, ref) is not ref:  # (or followed already)
            self.ledger.unfollow(account, to)

    def drop(self, account: Account | None, to: str, queue: SubscriberQueue) -> None:
        """Stop following `to` (nothing when it is not followed)."""
        ref = self.topics.pop(to, None)
        if ref is not None:
            ref.unsubscribe(queue)
            self.ledger.unfollow(account, to)

    def close(self, account: Account | None, queue: SubscriberQueue) -> None:
        """Stop following everything (the connection ended)."""
        for to in list(self.topics):
            self.drop(account, to, queue)
