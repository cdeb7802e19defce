"""An honest example agent for the field, playing through `protocol/client.py` only.

    python examples/field_agent.py --url ws://127.0.0.1:8000/ws [--token T] --game ID \\
        [--start SIZE --seed S]

It joins, then loops: observe its surroundings; commit every cell its own deduction
(examples/mosaic_logic.py) proves in its group's revealed tiles; else reveal a hidden
tile of its frontier (those with the most known cells first, so it grows toward the
cells its neighbours already fixed, i.e. toward other agents, before open space); else,
when a tile is genuinely ambiguous, guess one cell (the value most of its solutions
take, on the cell where they agree most; a rejection proves the other value, which it
commits next). A `stale_revision` means someone else wrote: it resends at the new
revision a few times after short jittered pauses (what it sends stays true), then
observes again. With nothing to play it waits for others; only a write can give it a move
again (someone solving a tile next to its territory merges their tiles into it, a growth
adds tiles), so once the field stays at one revision for `--patience` observes (on a
growing field: plus its growth period) it stops. It exits 0 once every tile is solved (on
a growing field: once it has also ended) or the game ended, 2 if it died, 3 when nothing
is left it can play, 1 on other errors.
"""

from __future__ import annotations

import argparse
import logging
import math
import random
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.mosaic_logic import Deducer
from protocol.client import Client, ClientError, ConnectionLost, RequestError

log = logging.getLogger("field_agent")
IDLE = 0.2  # seconds to wait when there is nothing to do but let others play
PATIENCE = 150  # idle observes at one revision before it stops (30 s at IDLE)
STALE_RETRIES = 4
BACKOFF = 0.005  # seconds: the first pause after stale_revision (doubling, jittered)


def backoff(attempt: int, rng: random.Random) -> float:
    """Seconds to pause before resending after the `attempt`-th (0-based) stale_revision:
    jittered and doubling, so the agents that lost one race do not all collide again."""
    return rng.uniform(0.0, BACKOFF * 2**attempt)


class Died(Exception):
    """The field refused us with `dead`."""


class NothingToPlay(Exception):
    """Nothing is left this agent can play, and nobody else writes."""


class Agent:
    """One agent's play on one field."""

    def __init__(self, client: Client, game: str, name: str, model: str,
                 patience: int = PATIENCE) -> None:
        self.c = client
        self.to = f"field:{game}"
        self.name = name
        self.model = model
        self.agent = ""
        self.deducer: Deducer | None = None
        self.learned: dict[int, int] = {}  # cells a rejection proved
        self.growing = False
        self.patience = patience
        self.still = 0  # idle observes at revision `still_at`
        self.still_at = -1
        self.stale = self.commits = self.guesses = 0
        self.rng = random.Random(name)  # retry jitter only: no effect on what is played

    async def call(self, op: str, **args: Any) -> Any:
        """One request; `generating` is waited out, `dead` raises Died."""
        while True:
            try:
                return await self.c.request(op, self.to, args)
            except RequestError as e:
                if e.code == "generating":
                    await trio.sleep(0.2)
                    continue
                if e.code == "dead":
                    raise Died(e.message) from None
                raise
            except ConnectionLost:
                await trio.sleep(0.2)  # the client reconnects; reads are safe to repeat
                if op != "field.observe" and op != "field.rules":
                    raise

    async def write(self, op: str, **args: Any) -> Any:
        """A write; on `stale_revision` it is sent again at the field's new revision
        after a short jittered pause (`backoff`).

        What we send stays true when others write (proven cells are facts, a reveal is
        refused if the tile stopped being hidden), so a few blind retries are honest;
        after STALE_RETRIES the caller observes again.
        """
        for attempt in range(STALE_RETRIES + 1):
            try:
                return await self.call(op, **args)
            except RequestError as e:
                if e.code != "stale_revision" or attempt == STALE_RETRIES:
                    raise
                self.stale += 1
                args["expected_revision"] = e.detail["revision"]
                await trio.sleep(backoff(attempt, self.rng))
        raise AssertionError("unreachable")

    async def run(self) -> None:
        """Join and play until the field is solved."""
        rules = await self.call("field.rules")
        self.growing = rules["grow"] is not None
        if self.growing:  # a timed growth may give it a frontier: wait one out as well
            self.patience += math.ceil(rules["grow"]["every_s"] / IDLE)
        glance = await self.call("field.observe", rect=[0, 0, 1, 1])
        if self.done(glance):
            return  # nothing left to play (and no hidden tile to be seated on)
        joined = await self.call("field.join", name=self.name, harness="examples/field_agent",
                                 model=self.model)
        self.agent = joined["agent"]
        log.info("%s joined as %s on tile %s", self.name, self.agent, joined["seed_tile"])
        while not await self.step():
            pass

    async def step(self) -> bool:
        """One observe and one write; True when the field is done."""
        obs = await self.call("field.observe", agent=self.agent)
        if self.done(obs):
            return True
        if self.deducer is None:
            self.deducer = Deducer(obs["G"])
        try:
            played = await self.act(obs)
        except RequestError as e:
            if e.code == "ended":
                return True  # a growth found no room: the game is over
            if e.code not in ("stale_revision", "not_hidden", "not_on_frontier"):
                raise
            self.stale += e.code == "stale_revision"
            played = True
        except (ConnectionLost, trio.TooSlowError):
            await trio.sleep(0.2)  # a write may or may not have landed: observe decides
            played = True
        self.count_idle(obs, played)
        return False

    def count_idle(self, obs: dict, played: bool) -> None:
        """Count the observes in a row, at one revision, with nothing to play; past
        `patience` raise NothingToPlay. Only a write can change what it may play (the
        seed's rules: commits count in its group's territory, reveals on its frontier, and
        both grow only when its group solves a tile, merges with another group, or the
        field grows), so a field nobody writes to leaves it nothing for good."""
        if played or obs["revision"] != self.still_at:
            self.still, self.still_at = 0, obs["revision"]
        if played:
            return
        self.still += 1
        if self.still > self.patience:
            mine = set(obs["territory"])
            theirs = [t["id"] for t in obs["tiles"]
                      if t["id"] in obs["frontier"] and t["id"] not in mine]
            why = (f"; its frontier's tiles {theirs} were revealed by other groups, theirs "
                   "to commit") if theirs else ""
            raise NothingToPlay(
                f"no hidden tile on its frontier, no cell of its territory left to commit"
                f"{why}; nobody wrote for {self.still} observes (revision {obs['revision']})")

    def done(self, obs: dict) -> bool:
        """Every tile solved (and, on a growing field, the game ended)."""
        solved = obs["totals"]["solved"] == obs["tiles_total"]
        return obs["ended"] or (solved and not self.growing)

    async def act(self, obs: dict) -> bool:
        """Commit what is proven, else reveal, else guess one cell (True), else wait
        (False)."""
        rev = obs["revision"]
        known = {c: v for c, v in obs["known"]}
        for c, v in list(self.learned.items()):
            if c in known:
                del self.learned[c]
        tiles = {t["id"]: t for t in obs["tiles"]}
        mine = set(obs["territory"])
        revealed = [t for t in obs["tiles"] if t["status"] == "revealed"]
        derived, sols = self.deducer.deduce(revealed, {**known, **self.learned})
        ours = [t for t in revealed if t["id"] in mine]
        cells = {c for t in ours for c in self.deducer.model(t).cells}
        batch = sorted([c, v] for c, v in {**derived, **self.learned}.items()
                       if c in cells and c not in known)
        if batch:
            await self.commit(rev, batch, f"{len(batch)} cells proven by propagation and search")
            return True
        hidden = [tiles[t] for t in obs["frontier"] if t in tiles and tiles[t]["status"] == "hidden"]
        if hidden:
            def known_share(t: dict) -> float:
                model = self.deducer.model(t)
                return sum(c in known for c in model.cells) / len(model.cells)
            tile = max(hidden, key=lambda t: (known_share(t), -t["id"]))
            await self.write("field.reveal", agent=self.agent, tile=tile["id"],
                            expected_revision=rev)
            return True
        guess = self.pick_guess(ours, sols, known)
        if guess is not None:
            self.guesses += 1
            await self.commit(rev, [list(guess)], "ambiguous tile: one guessed cell")
            return True
        await trio.sleep(IDLE)  # our frontier is done; others may still be playing
        return False

    def pick_guess(self, ours: list[dict], sols: dict, known: dict) -> tuple[int, int] | None:
        """In our ambiguous tile with the fewest solutions, the cell whose value most of them
        share, with that value: the likeliest right guess."""
        for t in sorted(ours, key=lambda t: len(sols.get(t["id"], ())) or 1 << 30):
            found = sols.get(t["id"])
            if not found or len(found) < 2:
                continue
            best = None
            for k, c in enumerate(self.deducer.model(t).cells):
                ones = sum(s[k] for s in found)
                if c not in known and 0 < ones < len(found):
                    share = max(ones, len(found) - ones)
                    if best is None or share > best[0]:
                        best = (share, c, int(2 * ones > len(found)))
            if best is not None:
                return best[1], best[2]
        return None

    async def commit(self, rev: int, batch: list[list[int]], intent: str) -> None:
        """Commit `batch`; what a rejection proves is remembered for the next commit."""
        result = await self.write("field.commit", agent=self.agent, cells=batch, intent=intent,
                                 expected_revision=rev)
        self.commits += 1
        for r in result["rejected"]:
            if r["reason"] == "wrong":
                self.learned[r["id"]] = 1 - r["v"]
        if result["health"]["state"] != "healthy":
            log.warning("%s: %s", self.agent, result.get("note"))


async def play_on(client: Client, game: str, *, start: int | None, seed: int, name: str,
                  model: str, patience: int = PATIENCE) -> dict:
    """Start the field if asked (and absent), play it to the end over `client`; figures.

    `client` is anything with the `request(op, to, args)` of `protocol.client.Client`.
    """
    if start is not None:
        try:
            await client.request("field.start", f"field:{game}", {"size": start, "seed": seed})
        except RequestError as e:
            if e.code != "already_exists":
                raise
    agent = Agent(client, game, name, model, patience)
    await agent.run()
    return {"agent": agent.agent, "commits": agent.commits, "guesses": agent.guesses,
            "stale": agent.stale}


async def play(url: str, game: str, *, token: str | None = None, start: int | None = None,
               seed: int = 0, name: str = "example", model: str = "none",
               patience: int = PATIENCE) -> dict:
    """Connect, start the field if asked (and absent), play it to the end; figures."""
    async with Client.connect(url, token=token, client="field_agent/1.0") as client:
        return await play_on(client, game, start=start, seed=seed, name=name, model=model,
                             patience=patience)


def report(run: Callable[[], Awaitable[dict]],
           errors: tuple[type[Exception], ...] = (ClientError, OSError)) -> int:
    """Run `run` under trio and say how it ended: its figures on stdout (exit status 0),
    else one line on stderr: `dead: ...` (2), `nothing left this agent can play: ...` (3),
    or `error: ...` for one of `errors` (1)."""
    try:
        figures = trio.run(run)
    except Died as e:
        print(f"dead: {e}", file=sys.stderr)
        return 2
    except NothingToPlay as e:
        print(f"nothing left this agent can play: {e}", file=sys.stderr)
        return 3
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(figures)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="ws://127.0.0.1:8000/ws")
    p.add_argument("--token")
    p.add_argument("--game", required=True)
    p.add_argument("--start", type=int, metavar="SIZE", help="start a SIZE x SIZE field first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="example")
    p.add_argument("--model", default="none")
    add_patience(p)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    return report(lambda: play(args.url, args.game, token=args.token, start=args.start,
                               seed=args.seed, name=args.name, model=args.model,
                               patience=args.patience))


def add_patience(p: argparse.ArgumentParser) -> None:
    """The `--patience` option both example agents take."""
    p.add_argument("--patience", type=int, default=PATIENCE, metavar="N",
                   help="idle observes at one revision before it gives up (default "
                        f"{PATIENCE}: {PATIENCE * IDLE:g} s)")


if __name__ == "__main__":
    sys.exit(main())
