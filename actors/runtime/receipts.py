"""What an actor remembers of its recent writes' request ids, so that a retried write is
answered with its first reply instead of being applied again.

A request id is chosen by its client, so it is remembered with its caller: only the same
caller sending it again is a retry (another caller's write with the same id, by accident
or on purpose, is its own write and never gets the first caller's reply).

A write that carried a request id and committed events leaves a `Receipt` (the caller,
the id, the revision of its last event, its reply as JSON), appended to the store with
the write's events in one transaction (actors/store.py). The actor keeps the receipts of
the last `window` revisions: those of its batch not yet durable, and those read back from
the store whenever it (re)loads, on whichever process that happens. Stored receipts out
of the window are read by nobody: the actor has the store forget them (`to_forget`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from actors.store import Receipt

Key = tuple[str, str]  # (caller, request id)


class Receipts:
    """(Caller, request id) -> reply of the writes of the last `window` revisions."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.staged: list[Receipt] = []  # the batch's, appended with its events
        # Whether the store may hold receipts this actor has not had it forget (set at load
        # and when a batch stores some): a world that stores no more keeps one window's.
        self.to_forget = True
        self._replies: dict[Key, Any] = {}
        self._order: deque[tuple[int, Key]] = deque()

    def seen(self, caller: str, request_id: str) -> tuple[bool, Any]:
        """`(True, reply)` for a request id `caller` is remembered for, else `(False, None)`."""
        key = (caller, request_id)
        if key in self._replies:
            return True, self._replies[key]
        return False, None

    def keep(self, receipt: Receipt) -> None:
        """Remember a write of this batch and stage its receipt for the append."""
        self.staged.append(receipt)
        self._remember(receipt)

    def take(self) -> list[Receipt]:
        """The staged receipts, handed to the append (none staged afterwards)."""
        staged, self.staged = self.staged, []
        if staged:
            self.to_forget = True
        return staged

    def durable(self, rev: int) -> None:
        """The stream is durable up to `rev`: forget what is out of the window."""
        horizon = rev - self.window
        while self._order and self._order[0][0] <= horizon:
            _, key = self._order.popleft()
            self._replies.pop(key, None)

    def reset(self, stored: Iterable[Receipt]) -> None:
        """Start again from the store's receipts (after a load); nothing staged."""
        self._replies.clear()
        self._order.clear()
        for receipt in stored:
            self._remember(receipt)
        self.staged = []
        self.to_forget = True

    def _remember(self, receipt: Receipt) -> None:
        key = (receipt.caller, receipt.request_id)
        self._replies[key] = receipt.result
        self._order.append((receipt.rev, key))
