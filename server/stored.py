"""The bytes a client's requests make the server store: `stored_per_hour`.

Every write is bounded in rate (frames a second, server time), but not in total: a seated
field agent looping commit / retract on a tile's cells, a judge's votes, puzzle moves or
counter adds would grow the store for as long as they run. So each account holds a bucket
of bytes, `stored_per_hour` for an agent's (`stored_anonymous` for a spectator's, by role
as `inflight_anonymous`), refilled over the hour; the owner has none.

A request is charged the size of the events its message appended, as the store wrote
them: the runtime tells its answer once the batch's append is done (`stored(bytes)`,
actors/runtime/base.py; nothing is encoded again) and the answer its ticket
(server/claims.py `Ticket.stored`). Events no request caused (timers, growth, a world's
own messages, an offloaded result's) are charged to nobody. Charged after the fact, the
bucket may run into debt (by at most what the account's requests in flight wrote); while
it is empty, `Claims.admit` refuses the account's requests that may write `over_budget`
before any world sees them: every op its kind does not mark a read (`World.reads`, an effect
actor's `effect_reads`), so reads such as `field.observe` or `lobby.list` are still served.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ProtocolError, over_budget

if TYPE_CHECKING:
    from server.budgets import Account, Budgets


def may_store(budgets: Budgets, account: Account, now: float) -> ProtocolError | None:
    """Why `account` may not send a request that writes now (its bucket is empty), or
    None."""
    bucket = account.stored
    if bucket.refill(now) > 0:
        return None
    budget, limit = (("stored_anonymous", budgets.stored_anonymous) if account.spectator
                     else ("stored_per_hour", budgets.stored_per_hour))
    return over_budget(budget, f"this client's requests stored more than {limit:,} bytes "
                       "in an hour; reads are still served", limit,
                       bucket.wait(now) if bucket.rate > 0 else None)


def charge_stored(account: Account, nbytes: int, now: float) -> None:
    """`account`'s request appended `nbytes` of events to the store."""
    bucket = account.stored
    bucket.refill(now)
    bucket.level -= nbytes
