"""The birth loop's wait after a model birth that bears nothing: a reply that breaks the
format or fails validation backs the loop off like a model error does (each call is paid
for), only a birth ends the wait, and a rejection keeps only the head of a long reply; an
endpoint's Retry-After (capped) makes the wait at least that long. The model hears of a
directive only once the store keeps it, and a call kept across a restart holds its track.

The lab reads trio's clock as its own (the directory's `clock`), a mock clock the test
moves a birth tick at a time, so minutes of the loop pass at once; the model is a
chat-completions server on loopback speaking the real wire format."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from actors.chat_completions import MAX_RETRY_AFTER
from actors.ecosystem.endpoint import ModelEndpoint
from actors.lab import WORLD
from actors.lab import actor as lab_actor
from actors.lab.births import MAX_REJECTED_CODE
from actors.lab.breed import generate
from actors.lab.contract import contract_text
from actors.runtime import Call
from actors.runtime.context import RuntimeConfig
from actors.runtime.directory import ActorKind, open_directory
from actors.runtime.mailbox import Pending
from actors.store import MemoryEventStore
from protocol.ops import lab as ops
from tests.clocked import SETTLE_TURNS, run_for, settled, trio_ms
from tests.lab.live import ChatServer, variant
from tests.runtime.failing import CRASH, FailsOneAppend, crash_calls

LAB = "lab:junk"
TICK = lab_actor.LabActor.birth_tick  # seconds the tests move the lab's clock at a time
JUNK = "x" * 900_000  # long text, no fence: the format's rejection
PANELS = [code for _, code in generate("panel", 7, 40)]


class Model(ChatServer):
    """A chat-completions server answering each birth prompt with `reply(track, n)` (n:
    the requests so far; a reply as `ChatServer`'s `answer` gives one); `requests` counts
    them."""

    def __init__(self, reply: Callable[[str, int], str | tuple[int, str]]) -> None:
        def answer(prompt: str) -> str:
            track = "shader" if prompt.startswith(contract_text("shader")) else "panel"
            return reply(track, len(self.prompts))

        super().__init__(answer)
        self.endpoint = ModelEndpoint(self.url, "fake-model", timeout=10.0)

    @property
    def requests(self) -> int:
        """The requests so far."""
        return len(self.prompts)


@asynccontextmanager
async def breeding(model: Model, backlog: int = 16, store: MemoryEventStore | None = None,
                   config: RuntimeConfig | None = None
                   ) -> AsyncIterator[tuple[Any, MemoryEventStore]]:
    """A lab breeding through `model` (`backlog` a track), and its store (`store`, or a
    fresh one), under the runtime's `config` (or its defaults)."""
    store = MemoryEventStore() if store is None else store
    try:
        async with open_directory(store, [ActorKind.of(WORLD)], clock=trio_ms, config=config,
                                  model=model.endpoint) as directory:
            await directory.ask(LAB, Call("lab.create", ops.CreateArgs(backlog=backlog),
                                          "owner", "owner:me"))
            actor = await directory.get(LAB)
            await settled(actor)
            yield actor, store
    finally:
        model.close()


async def stored(store: MemoryEventStore) -> list[dict[str, Any]]:
    """The lab's stored events as JSON."""
    return [e.data for e in await store.read(LAB)]


async def test_replies_that_break_the_format_back_the_loop_off(mock_clock) -> None:
    # Before: the loop asked again at every tick (2 tracks, 2 ticks a second: ~480 paid
    # calls in these 2 minutes, each stored with 48,000 characters of junk).
    model = Model(lambda track, n: JUNK)
    async with breeding(model) as (actor, store):
        await run_for(mock_clock, actor, 120, TICK)
        events = await stored(store)
    rejected = [e for e in events if e["type"] == "rejected"]
    # the waits double from 5 s on the lab's clock: a few calls, not hundreds
    assert 2 <= model.requests <= 10 and len(rejected) == model.requests
    assert {e["reason"] for e in rejected} == {"expected exactly one fenced block"}
    assert all(e["code"] == JUNK[:MAX_REJECTED_CODE] for e in rejected)  # the head only
    assert not any(e["type"] == "born" for e in events)
    assert actor._model_backoff > lab_actor.MODEL_BACKOFF_MS[0]


async def test_a_validation_rejection_backs_off_and_only_a_birth_ends_the_wait(
        mock_clock) -> None:
    good = False

    def reply(track: str, n: int) -> str:
        if not good:  # the format holds; the validator refuses it
            return ("```glsl\nuniform float u_x;\n" + variant(n) + "\n```" if track == "shader"
                    else "```html\n<p>too bare</p>\n```")
        return (f"```glsl\n{variant(n)}\n```" if track == "shader"
                else f"```html\n{PANELS[n % len(PANELS)]}\n```")

    model = Model(reply)
    async with breeding(model) as (actor, store):
        await run_for(mock_clock, actor, 120, TICK)
        requests, backoff = model.requests, actor._model_backoff
        good = True
        for _ in range(600):  # the lab's clock: 10 minutes at most, past the longest wait
            if any(o.source == "model" for o in actor.state.organisms.values()):
                break
            await run_for(mock_clock, actor, 1, TICK)
        events = await stored(store)
    assert 2 <= requests <= 10 and backoff > lab_actor.MODEL_BACKOFF_MS[0]
    assert "extra uniform" in {e["reason"] for e in events if e["type"] == "rejected"}
    assert actor._model_backoff == lab_actor.MODEL_BACKOFF_MS[0]  # a birth ends the wait
    assert any(e["type"] == "born" and e["source"] == "model" for e in events)


@pytest.mark.parametrize("retry_after", [8, 3600], ids=["named", "capped"])
async def test_an_unavailable_model_is_asked_again_not_before_its_retry_after(
        mock_clock, retry_after: int) -> None:
    # Before: the loop's own wait (5 s) alone, whatever the endpoint asked.
    asked = 0  # shader requests

    def reply(track: str, n: int) -> str | tuple[int, str]:
        nonlocal asked
        if track == "panel":  # born at once: the panel track's backlog (1) is full
            return f"```html\n{PANELS[0]}\n```"
        asked += 1
        return (429, str(retry_after))

    model = Model(reply)
    times: list[float] = []  # the lab's clock at each shader request
    async with breeding(model, backlog=1) as (actor, store):
        while len(times) < 2 and trio.current_time() < 60:
            await run_for(mock_clock, actor, actor.birth_tick, TICK)
            times += [trio.current_time()] * (asked - len(times))
        events = await stored(store)
    wait = min(retry_after, MAX_RETRY_AFTER)
    assert wait <= times[1] - times[0] <= wait + actor.birth_tick, times
    assert [e["source"] for e in events if e["type"] == "born"] == ["model"]  # the panel
    assert not any(e["type"] == "rejected" for e in events)  # a model error stores nothing


async def test_the_model_hears_no_directive_before_the_store_keeps_it(mock_clock) -> None:
    # Before: a track without directives explored one and asked the model with it from the
    # same tick, before the batch's append: when that append failed, the model had been
    # asked (and paid) for a directive the lab never kept.
    model = Model(lambda track, n: f"```glsl\n{variant(n)}\n```" if track == "shader"
                  else f"```html\n{PANELS[n % len(PANELS)]}\n```")
    store = FailsOneAppend()
    store.stream = LAB
    async with breeding(model, store=store) as (actor, _):
        store.fail = OSError("the disk said no")
        await run_for(mock_clock, actor, TICK, TICK)  # explores both tracks' first directive
        assert store.fail is None and actor.statistics().restarts == 1  # its append failed
        assert model.requests == 0, "the model was asked with a directive nobody stored"
        assert [e["type"] for e in await stored(store)] == ["created"]
        for _ in range(20):  # explored again and stored this time: then asked
            if model.requests >= 2:
                break
            await run_for(mock_clock, actor, TICK, TICK)
        texts = [e["directive"]["text"] for e in await stored(store)
                 if e["type"] == "directive_added"]
    assert model.requests >= 2
    assert all(any(p.endswith(f"\n{text}\n") for text in texts) for p in model.prompts)


@pytest.mark.parametrize(("batch_seconds", "tick_again"),
                         [(60.0, False), (60.0, True), (RuntimeConfig().batch_seconds, False)],
                         ids=["kept-in-the-batch", "ticked-in-the-batch", "running"])
async def test_a_model_call_across_a_restart_still_holds_its_track(
        mock_clock, monkeypatch: pytest.MonkeyPatch, batch_seconds: float,
        tick_again: bool) -> None:
    # Before: a crash restarted the lab, whose `on_start` freed every track, while the
    # tick's model calls ran (a later batch: "running") or before they started (the same
    # batch, whose calls are kept and start after the next append: "kept-in-the-batch"):
    # the next tick asked the model for both tracks again while it was still answering;
    # so did a tick queued behind the crash in the same batch ("ticked-in-the-batch"),
    # whose calls were kept beside the first tick's.
    answer = threading.Event()

    def reply(track: str, n: int) -> str:
        answer.wait(30)
        return (f"```glsl\n{variant(n)}\n```" if track == "shader"
                else f"```html\n{PANELS[n % len(PANELS)]}\n```")

    crash_calls(monkeypatch)
    model = Model(reply)
    async with breeding(model, config=RuntimeConfig(batch_seconds=batch_seconds)) as (actor,
                                                                                      _):
        crash = Pending()
        actor.tell(lab_actor._BirthTick())  # explores both tracks' first directive
        actor.send(Call("lab.create", ops.CreateArgs(), "owner", CRASH), crash)
        if tick_again:
            actor.tell(lab_actor._BirthTick())
        for _ in range(SETTLE_TURNS):  # the kept calls reach the model once stored
            if model.requests == 2:
                break
            await trio.to_thread.run_sync(time.sleep, 0.005)
        assert crash.error is not None and actor.statistics().restarts == 1
        for _ in range(4):  # ticks while the model answers
            mock_clock.jump(TICK)
            await trio.testing.wait_all_tasks_blocked()
        calls, busy = actor._offloads, set(actor._loop_busy)
        answer.set()
        await settled(actor)
    assert (calls, busy) == (2, {"shader", "panel"})
    assert model.requests == 2
