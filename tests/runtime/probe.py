"""A small test world: a counter whose handlers can sleep, block, defer their answer, crash,
commit then crash, or make a commit durable then crash."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import attrs
import trio

from actors.runtime import Actor, Call, RuntimeConfig
from protocol.errors import ErrorCode, ProtocolError

# What waits in the mailbox is one batch however slow this machine is (a batch otherwise
# also ends after `batch_seconds` of handling, and a blocked handler counts).
ONE_BATCH = RuntimeConfig(batch_seconds=math.inf)


@attrs.frozen
class Create:
    """The probe's create call: one `created` event (once `release` is set, if given), or
    a refusal when `refuse`."""

    refuse: bool = False
    release: trio.Event | None = None


@attrs.frozen
class Add:
    amount: int


@attrs.frozen
class Crash:
    after_commit: bool = False


@attrs.frozen
class Durable:
    """Commit `amount`, make it durable (`Actor.durable`), then commit 1000 and crash."""

    amount: int


@attrs.frozen
class Sleep:
    seconds: float


@attrs.frozen
class Spin:
    """Keep the actor's task busy (no await) for `seconds`."""

    seconds: float


@attrs.frozen
class Block:
    release: trio.Event


@attrs.frozen
class Defer:
    """Answered later, by a `Settle` tell."""


@attrs.frozen
class Settle:
    """A tell: give the deferred answer."""


@attrs.frozen
class Offload:
    """Wait for `gate` in a worker thread (`Actor.offload`, `io` as given); its end is noted
    ("offloaded")."""

    gate: threading.Event
    io: bool = False


@attrs.frozen
class Note:
    """A tell/timer message: counted in memory only."""

    text: str


class ProbeActor(Actor):
    kind = "probe"
    active = 0  # handlers running right now, across instances (one-at-a-time checks)
    peak_active = 0

    def reset(self) -> None:
        self.total = 0
        self.amounts: list[int] = []
        self.notes: list[str] = []

    def apply(self, event: dict[str, Any]) -> None:
        if event["type"] == "added":
            self.total += event["amount"]
            self.amounts.append(event["amount"])

    def snapshot(self) -> dict[str, Any]:
        return {"total": self.total, "amounts": list(self.amounts)}

    def restore(self, data: dict[str, Any]) -> None:
        self.total, self.amounts = data["total"], list(data["amounts"])

    def view(self) -> dict[str, Any]:
        return {"total": self.total, "rev": self.rev}

    async def handle(self, call: Call | Any) -> Any:
        message = call.args if isinstance(call, Call) else call
        cls = type(self)
        cls.active += 1
        cls.peak_active = max(cls.peak_active, cls.active)
        try:
            if isinstance(message, Create):
                if message.refuse or self.rev:
                    raise ProtocolError(ErrorCode.ALREADY_EXISTS if self.rev else
                                        ErrorCode.BAD_REQUEST, "refused", {})
                if message.release is not None:
                    await message.release.wait()
                return await self.commit([{"type": "created"}])
            if isinstance(message, Add):
                return await self.commit([{"type": "added", "amount": message.amount}])
            if isinstance(message, Sleep):
                await trio.sleep(message.seconds)
                return "slept"
            if isinstance(message, Spin):
                end = time.perf_counter() + message.seconds
                while time.perf_counter() < end:
                    pass
                return "spun"
            if isinstance(message, Block):
                await message.release.wait()
                return "released"
            if isinstance(message, Offload):
                self.offload(message.gate.wait, lambda _: Note("offloaded"), lambda: None,
                             io=message.io)
                return "offloading"
            if isinstance(message, Defer):
                self.owed = self.defer()
                return None
            if isinstance(message, Durable):
                await self.commit([{"type": "added", "amount": message.amount}])
                await self.durable()
                message = Crash(after_commit=True)
            if isinstance(message, Crash):
                if message.after_commit:
                    await self.commit([{"type": "added", "amount": 1000}])
                raise ZeroDivisionError("the handler broke")  # any non-protocol error
            return self.total
        finally:
            cls.active -= 1

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Note):
            self.notes.append(message.text)
        elif isinstance(message, Settle):
            self.owed.succeed("settled")
        else:
            await super().on_message(message)
