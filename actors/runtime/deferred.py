"""What an actor's message hands back besides its answer: a `Deferred` answer slot (an
ask answered from a later message), the CPU time a message cost its sender (its
handling, or loading the world it named: actors/runtime/directory.py) and the bytes its
events took in the store: each told through its answer's method, if it has one (`told`)."""

from __future__ import annotations

from collections.abc import Callable
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
        tell(self._answer, "charge", seconds)


def charge_sender(item: Ask, seconds: float) -> None:
    """Tell the sender what its message cost: the time the handler took, its own waits
    included (a read of the store it made), the batch's flush before a subscription not."""
    tell(item.message.queue if isinstance(item.message, SubscribeMsg) else item.pending,
         "charge", seconds)


def told(target: Any, name: str) -> Callable[[float], None] | None:
    """How the caller behind `target` hears a figure of what its message cost: the method
    `name` of its answer (or subscriber queue), `charge(seconds)` (the server charges its
    CPU budget) or `stored(nbytes)` (its `stored_per_hour`); None when it has none (a
    target that charges nobody)."""
    return getattr(target, name, None)


def tell(target: Any, name: str, figure: float) -> None:
    """Tell the caller behind `target` `figure` through `told(target, name)`, if it has it."""
    method = told(target, name)
    if method is not None:
        method(figure)


class Passing:
    """The base of an answer that wraps its caller's (`_answer`): the caller's footprint,
    and both figures of what serving it cost, pass through to it."""

    __slots__ = ("_answer",)

    def __init__(self, answer: Answer) -> None:
        self._answer = answer

    @property
    def footprint(self) -> int | None:
        """Its caller's (`SubscriberQueue.footprint`): a load or forward it causes is its own."""
        return self._answer.footprint

    def charge(self, seconds: float) -> None:
        """Serving the message cost `seconds` (told its caller)."""
        tell(self._answer, "charge", seconds)

    def stored(self, nbytes: int) -> None:
        """The message's events took `nbytes` in the store (told its caller)."""
        tell(self._answer, "stored", nbytes)
