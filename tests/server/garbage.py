"""What of the server's only the cyclic garbage collector frees (tests/server/
test_cyclic_garbage.py): a test runs with the collector off, then counts what one pass
frees."""

from __future__ import annotations

import gc
import threading
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from actors.runtime.offload import OFFLOAD_THREAD

# A connection left in a cycle leaves objects of these in it (its Session, WebSocket, the
# websockets ServerProtocol; an HTTP connection's Hypercorn server). The test's clients are
# in this process too: their cycles (websockets' client, httpx, trio, exceptions) are theirs.
OURS = ("server.", "actors.", "protocol.", "websockets.server.", "hypercorn.")


def _ours() -> Counter[str]:
    names = (f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
    return Counter(name for name in names if name.startswith(OURS))


def cyclic_garbage() -> Counter[str]:
    """What of the server's only a full pass of the collector frees, by type: the objects
    alive before it less those after (counted, not saved: a cycle a finalizer breaks, a
    suspended generator's, is freed by the pass without ever being `gc.garbage`)."""
    before = _ours()
    gc.collect()
    return before - _ours()


async def _offloads_ended() -> None:
    """Wait until no worker thread runs offloaded work. An earlier test's server may have
    left some running, abandoned at its stop (a field's generation): it holds that server
    and lets it go when it ends, all of it cyclic garbage (though none of this test's)."""
    with trio.fail_after(120):
        while any(t.name == OFFLOAD_THREAD for t in threading.enumerate()):
            await trio.sleep(0.05)


@asynccontextmanager
async def collector_off() -> AsyncIterator[None]:
    """The collector quiet in between: what is left is counted at the end, not taken.
    Offloaded work still running (an earlier server's) ends first."""
    await _offloads_ended()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
