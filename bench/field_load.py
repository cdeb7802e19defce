"""`python -m bench field_load`: loading a stored field from its snapshot, and by replay.

A daily-sized field (a G = 1000 canvas, 3 x 3 chunks of 40 cells, grown a ring whenever its
agents run out of tiles) is played by eight agents through the referee to `--events`
events (commits of 1-3 correct cells, retractions of their own cells), and stored as the
field actor stores it (SQLite in a temporary directory, the secret in its side stream)
twice: one stream never gets a snapshot (every load folds every event, as before the field
had a snapshot codec), the other gets the one the runtime saves. The runtime then loads
each `--turns` times, in alternating turns.

Figures (medians of the turns; wall seconds, the machine may be shared):
`replay_load_s` and `snapshot_load_s` (`Directory.get` until the world is live, its secret
loaded), `load_ratio` (replay over snapshot); `replay_stall_s` and `snapshot_stall_s`, the
longest the trio thread was held meanwhile (every other world waits that long);
`snapshot_bytes` (its JSON text) and `snapshot_dump_s` (what the runtime pays every
`snapshot_every` events); `history_fold_s` and `history_stall_s`: the first `field.history`
ask for a revision before the snapshot, which waits while the stored events up to it are
read and folded again off the task. The loads run under the server's collector settings
(`server.commands.tune_gc`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import numpy as np
import trio

from actors import field
from actors.field import referee, rules
from actors.field.actor import truth_stream
from actors.field.events import GameRules, GrowEvent, ManifestEvent
from actors.field.fold import HIDDEN
from actors.field.generate import generate_chunks, grow
from actors.field.territory import frontier
from actors.runtime import Actor, ActorKind, Call, RuntimeConfig, open_directory
from protocol.ops.field import HistoryArgs, RulesArgs
from server.commands import tune_gc
from server.storage import SqliteEventStore

AGENTS = 8
KINDS = [ActorKind.of(field.WORLD)]


def _log(message: str) -> None:
    print(f"[bench field_load] {message}", file=sys.stderr, flush=True)


def _played(events: int, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The field's secret (as stored) and its stored records after `events` events."""
    truth = generate_chunks(seed, 1000, 3, 40)
    w = rules.initial("bench")
    records: list[dict[str, Any]] = []
    t = 0

    def fold(ev: Any) -> None:
        nonlocal w
        w = rules.evolve(w, ev)
        records.append(rules.encode(ev, w))

    fold(ManifestEvent(rev=1, t=t, manifest=truth.manifest, rules=GameRules()))
    rng = np.random.default_rng(seed)
    for k in range(AGENTS):
        fold(rules.Joined(referee.join(w.state, rng, name=f"p{k}", model=f"m{k % 3}",
                                       user=f"u{k}", harness="bench", t=t), f"c{k}"))
    own: list[list[int]] = [[] for _ in range(AGENTS)]
    idle = 0
    while len(records) < events:
        t += 1000
        if idle > 4 * AGENTS:  # every agent ran out of tiles: the next ring
            s = w.state
            truth = grow(truth, s.geo)
            fold(GrowEvent(rev=s.revision + 1, t=t, tiles=truth.manifest.tiles[len(s.geo.tiles):],
                           seed_ring=truth.manifest.seed_rings[-1]))
            _log(f"grew to {len(truth.manifest.tiles)} tiles at {len(records)} events")
            idle = 0
        k = int(rng.integers(AGENTS))
        agent, s = f"a{k + 1}", w.state
        before = len(records)
        if own[k] and rng.random() < 0.45:
            cells = [own[k].pop() for _ in range(min(2, len(own[k])))]
            ev = referee.retract(s, agent=agent, cells=cells, t=t)
            if ev.retracted:
                fold(ev)
        elif fr := frontier(s, k):
            tile = fr[0]
            if s.status[tile] == HIDDEN:
                fold(referee.reveal(s, truth, agent=agent, tile=tile, t=t))
            else:
                cells = s.geo.tiles[tile].cells
                unknown = cells[s.values.take(cells) < 0][:int(rng.integers(1, 4))].tolist()
                ev = referee.commit(s, truth, agent=agent, t=t, intent="bench",
                                    cells=[[c, int(truth.solution[c])] for c in unknown])
                if ev.accepted:
                    fold(ev)
                    own[k] += [a.id for a in ev.accepted]
        idle = 0 if len(records) > before else idle + 1
    return truth.to_dict(), records


async def _timed(work: Awaitable[Any]) -> tuple[float, float, Any]:
    """(wall seconds, the longest the trio thread was held, result) of `await work`."""
    longest = 0.0

    async def ticker() -> None:
        nonlocal longest
        while True:
            t = time.perf_counter()
            await trio.sleep(0.001)
            longest = max(longest, time.perf_counter() - t - 0.001)

    async with trio.open_nursery() as n:
        n.start_soon(ticker)
        await trio.sleep(0.01)
        t0 = time.perf_counter()
        result = await work
        seconds = time.perf_counter() - t0
        n.cancel_scope.cancel()
    return seconds, longest, result


async def _run(path: Path, events: int, turns: int, seed: int) -> dict[str, Any]:
    _log(f"playing {events} events")
    truth, records = _played(events, seed)
    plain = RuntimeConfig(snapshot_every=10**9)  # this stream never gets a snapshot
    ids = {"replay": "field:replay", "snapshot": "field:snapshot"}
    async with SqliteEventStore.in_directory(path) as store:
        for actor_id in ids.values():
            await store.save_snapshot(truth_stream(actor_id.partition(":")[2]), 0, truth)
            for i in range(0, len(records), 5000):
                await store.append(actor_id, i, records[i:i + 5000])
        async with open_directory(store, KINDS) as d:  # one read: the runtime's snapshot
            await (await d.get(ids["snapshot"])).ask(Call("field.rules", RulesArgs(), "spectator",
                                                          "bench"))
        snap = await store.load_snapshot(ids["snapshot"])
        assert snap is not None and snap.rev == len(records)
        tune_gc()  # the collector as `petridish serve` sets it once listening
        figures: dict[str, list[float]] = {f"{way}_{what}": [] for way in ids
                                           for what in ("load_s", "stall_s")}
        live: Actor | None = None
        for turn in range(turns):
            for way, actor_id in ids.items():
                async with open_directory(store, KINDS, config=plain) as d:
                    seconds, stall, live = await _timed(d.get(actor_id))
                    figures[f"{way}_load_s"].append(seconds)
                    figures[f"{way}_stall_s"].append(stall)
                    if way == "snapshot" and turn == 0:
                        ask = Call("field.history", HistoryArgs(revision=1), "spectator", "b")
                        fold_s, fold_stall, _ = await _timed(live.ask(ask, 300))
                        assert live.state.history.first == 0
            _log(f"turn {turn + 1}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in figures.items()))
        assert live is not None
        dumps = []
        for _ in range(5):
            t0 = time.perf_counter()
            data = rules.dump(live.state)
            dumps.append(time.perf_counter() - t0)
    out: dict[str, Any] = {k: round(statistics.median(v), 4) for k, v in figures.items()}
    out.update(events=len(records), tiles=len(live.state.state.geo.tiles),
               known=live.state.state.totals.known, stream_bytes=sum(
                   len(json.dumps(r)) for r in records),
               load_ratio=round(out["replay_load_s"] / out["snapshot_load_s"], 1),
               snapshot_bytes=len(json.dumps(data)),
               snapshot_dump_s=round(statistics.median(dumps), 4),
               history_fold_s=round(fold_s, 3), history_stall_s=round(fold_stall, 3))
    return out


def main(argv: list[str]) -> dict[str, Any]:
    """Run the benchmark; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m bench field_load")
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent) as tmp:
        return trio.run(_run, Path(tmp), args.events, args.turns, args.seed)
