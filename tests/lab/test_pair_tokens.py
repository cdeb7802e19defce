"""A pair's token names one deal for its whole life, across an unload: the lab's deals are
in memory (the seed's records), so its count of deals starts again when the lab loads
again, at the revision it left; a vote carrying a token dealt before the unload counts for
the pair its voter was dealt, or not at all, never for another pair or another's.

The lab reads trio's clock as its own, a mock clock the test moves on to unload it; the
store is a real SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio.testing

from actors.lab import WORLD
from actors.lab.events import Created, Proven, encode
from actors.runtime import Call, RuntimeConfig
from actors.runtime.directory import ActorKind, open_directory
from protocol.errors import ProtocolError
from protocol.ops import lab as ops
from server.storage import SqliteEventStore
from tests.clocked import run_for, trio_ms
from tests.lab.live import born_record, variant

LAB = "lab:tokens"
IDLE = 60.0  # the runtime's idle timeout here, in seconds


async def planted(store: SqliteEventStore) -> tuple[list[str], list[str]]:
    """Three proven shaders and two canaries in `LAB`'s stream: their ids."""
    born = [born_record(variant(i), "shader") for i in range(5)]
    ids = [b["id"] for b in born]
    proofs = [encode(Proven(oid, "owner", "", 1)) for oid in ids[:3]]
    await store.append(LAB, 0, [encode(Created(7, backlog=0)), *born, *proofs])
    return ids[:3], ids[3:]


async def test_a_token_dealt_before_an_unload_counts_for_no_other_pair(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    # Before: the token was the draw of (revision, deals so far) alone. Benching is in
    # memory, so after the unload the same draw dealt the benched canary again under the
    # token of a pair dealt before it: a stale vote for their common member counted against
    # an organism its voter never saw.
    async with SqliteEventStore.in_directory(tmp_path) as store, open_directory(
            store, [ActorKind.of(WORLD)], clock=trio_ms,
            config=RuntimeConfig(idle_timeout=IDLE)) as directory:
        _, (benched, _) = await planted(store)

        async def ask(op: str, args: Any, key: str) -> Any:
            return await directory.ask(LAB, Call(op, args, "spectator", key))

        for key in ("k1", "k2"):  # two strikes bench one canary (in memory)
            for _ in range(100):
                if (await ask("lab.public_pair", ops.PublicPairArgs(key), key)).canary \
                        == benched:
                    break
            await ask("lab.seen", ops.SeenArgs(benched, key, ok=False), key)
        seen: dict[str, tuple[str, str]] = {}  # token -> the pair judge "a" was dealt
        for _ in range(20):
            pair = await ask("lab.public_pair", ops.PublicPairArgs("a"), "a")
            seen[pair.pair] = (pair.left.id, pair.right.id)
        actor = await directory.get(LAB)
        rev = actor.rev
        await run_for(mock_clock, actor, IDLE + 1, 1.0)
        assert actor.stopped and directory.live() == []

        for n in range(60):  # loaded again at the same revision: "a" and "b" deal in turn
            key = "ab"[n % 2]
            await ask("lab.public_pair", ops.PublicPairArgs(key), key)
        assert (await directory.get(LAB)).rev == rev
        counted = []
        for token, (left, right) in seen.items():  # "a" votes on what it was dealt before
            try:
                voted = await ask("lab.vote", ops.VoteArgs(token, left, "a"), "a")
            except ProtocolError as error:
                assert error.code in ("not_dealt", "not_in_pair")
            else:
                counted.append((token, voted.winner.id, voted.loser.id))
    other = [(seen[token], (w, lo)) for token, w, lo in counted if (w, lo) != seen[token]]
    assert other == [], "votes on pairs dealt before the unload counted for other pairs"
