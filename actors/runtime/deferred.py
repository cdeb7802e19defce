"""What an actor's message hands back besides its answer: a `Deferred` answer slot (an
ask answered from a later message), the CPU time a message cost its sender (its
handling, or loading the world it named: actors/runtime/directory.py) and the bytes its
events took in the store (`tell_stored`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.runtime.mailbox import Answer, Ask, SubscribeMsg
from protocol.errors import ProtocolError

if TYPE_CHECKING:
    from actors.runtime.base import Actor


class Deferred:
    """The answer slot of an ask whose handler answers later (`Actor.defer`). Call `succeed`
    or `fail` once, from the actor's own task (a handler or `on_message`); the answer goes
    out with that batch, once it is durable."""

    __slots__ = ("_actor", "_answer")

    def __init__(self, actor: Actor, answer: Answer) -> None:
        self._actor = actor
        self._answer = answer

    def succeed(self, value: Any) -> None:
        """Answer with `value`."""
        self._actor._settle(self, value, None)

    def fail(self, error: ProtocolError) -> None:
        """Answer with a refusal."""
        self._actor._settle(self, None, error)

    def charge(self, seconds: float) -> None:
        """Tell the caller what serving it cost beyond its handler (work it set off
        elsewhere, e.g. offloaded): charged to its CPU budget like the handler's time."""
        charge(self._answer, seconds)


def charge_sender(item: Ask, seconds: float) -> None:
    """Tell the sender what its message cost: the time the handler took, its own waits
    included (a read of the store it made), the batch's flush before a subscription not."""
    charge(item.message.queue if isinstance(item.message, SubscribeMsg) else item.pending,
           seconds)


def charge(target: Any, seconds: float) -> None:
    """Tell the caller behind `target` what serving it cost: an answer (or a subscriber's
    queue) with a `charge(seconds)` method hears it (the server charges it to the
    caller's CPU budget); any other target is charged nothing."""
    method = getattr(target, "charge", None)
    if method is not None:
        method(seconds)


def tell_stored(target: Any, nbytes: int) -> None:
    """Tell the caller behind `target` (an answer, maybe wrapped) that its message's events
    took `nbytes` in the store: an answer with a `stored(nbytes)` method hears it (the
    server charges it to the caller's `stored_per_hour`); any other is told nothing."""
    method = getattr(target, "stored", None)
    if method is not None:
        method(nbytes)
