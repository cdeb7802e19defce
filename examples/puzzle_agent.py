"""An example agent for the puzzle rooms, playing a pack through `protocol/` only (its client,
its op bounds).

    python examples/puzzle_agent.py --url ws://127.0.0.1:8000/ws [--token T] [--room NAME] \\
        [--pack starter] [--budget-ms 1000]

It creates the room `puzzle:<room>` from the bundled pack (or takes it up again if it is
already its player's), then plays level after level with the solver's help: it asks
`puzzle.hint` from the current board, plays the moves it gets one turn at a time at the
room's revision, and goes on with `puzzle.next` once the level is won. A budget counts search
work, so the same board and budget give the same answer: a hint that says `unknown` because
the budget's expansions ran out (`node cap`) is asked again with twice the budget, up to the
op's maximum; one the server's wall-clock ceiling stopped (`time cap`, a busy server) is
asked again as it was; any other `unknown` would only repeat, and the agent gives up on the
level. A hint that says `unsolvable` means the board went wrong: it resets the level first.
It prints one line per level and exits 0 once every level of the pack is won, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import trio

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.client import Client, ClientError, ConnectionLost, RequestError
from protocol.ops.puzzle import MAX_HINT_MS

DIRS = {"u": "up", "d": "down", "l": "left", "r": "right", "s": "wait"}
HINT_TRIES = 8  # hints asked per level before giving up on it (1000 doubles to 8000 in 3)


def budget_after(budget_ms: int, reason: str) -> int | None:
    """The budget to ask again with after an `unknown` hint at `budget_ms` that gave
    `reason`; None when asking again could not change the answer."""
    if "time cap" in reason:  # the server's ceiling: a less busy moment may finish it
        return budget_ms
    if "node cap" in reason and budget_ms < MAX_HINT_MS:
        return min(2 * budget_ms, MAX_HINT_MS)
    return None  # the largest budget's expansions, or the search memory: the same again


class Stuck(Exception):
    """A level the agent could not win."""


class Agent:
    """One agent playing one room."""

    def __init__(self, client: Client, room: str, budget_ms: int) -> None:
        self.c = client
        self.to = f"puzzle:{room}"
        self.budget_ms = budget_ms

    async def request(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """One request to the room."""
        return await self.c.request(op, self.to, args or {}, timeout=60.0)

    async def open(self, pack: str) -> dict[str, Any]:
        """Create the room, or take up the one this agent plays already."""
        try:
            return await self.request("puzzle.create", {"pack": pack})
        except RequestError as err:
            if err.code != "already_exists":
                raise
        view = await self.request("puzzle.view")
        if view["player"] != self.c.hello.get("name"):
            raise Stuck(f"{self.to} is {view['player']}'s room")
        return view

    async def win_level(self, view: dict[str, Any]) -> dict[str, Any]:
        """Play the level `view` shows until it is won; the view then."""
        budget = self.budget_ms
        for _ in range(HINT_TRIES):
            if view["won"]:
                return view
            try:
                hint = await self.request("puzzle.hint", {"budget_ms": budget})
            except RequestError as err:
                if err.code != "searching":  # our own earlier hint, before a reconnect
                    raise
                await trio.sleep(1.0)
                view = await self.request("puzzle.view")
                continue
            if hint["status"] == "unsolvable":
                view = (await self.request("puzzle.reset"))["room"]
                continue
            if hint["status"] == "solved":
                view = await self.play(hint["moves"], view["revision"])
                continue
            again = budget_after(budget, hint["reason"])
            if again is None:
                raise Stuck(f"level {view['level_id']!r}: no hint at budget {budget} "
                            f"({hint['reason']})")
            budget = again
        if not view["won"]:
            raise Stuck(f"level {view['level_id']!r} was not won after {HINT_TRIES} hints")
        return view

    async def play(self, moves: str, rev: int) -> dict[str, Any]:
        """Play `moves` one turn at a time; stops at the first refusal (the next hint
        starts from wherever the board is)."""
        for letter in moves:
            try:
                reply = await self.request("puzzle.move", {"dir": DIRS[letter],
                                                           "expected_revision": rev})
            except (RequestError, ConnectionLost):
                break
            rev = reply["room"]["revision"]
        return await self.request("puzzle.view")

    async def run(self, pack: str) -> bool:
        """Win every level of the pack; True when all are won."""
        view = await self.open(pack)
        while True:
            view = await self.win_level(view)
            print(f"{view['level'] + 1}/{view['levels']} {view['level_id']}: won in "
                  f"{len(view['moves'])} moves", flush=True)
            if view["level"] + 1 == view["levels"]:
                return await self._all_won()
            view = (await self.request("puzzle.next"))["room"]

    async def _all_won(self) -> bool:
        """Whether every level of the pack is won (a room taken up mid-pack may miss some)."""
        view = await self.request("puzzle.view")
        missing = [lv["id"] for lv in view["pack_levels"] if lv["id"] not in view["solved"]]
        if missing:
            print(f"not won: {', '.join(missing)}", file=sys.stderr)
        return not missing


async def main_async(args: argparse.Namespace) -> int:
    """Connect and play; the exit code."""
    try:
        async with Client.connect(args.url, token=args.token, client="puzzle-agent/1.0") as c:
            won = await Agent(c, args.room, args.budget_ms).run(args.pack)
    except (ClientError, Stuck) as err:
        print(f"puzzle_agent: {err}", file=sys.stderr)
        return 1
    return 0 if won else 1


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="ws://127.0.0.1:8000/ws")
    parser.add_argument("--token", default=None)
    parser.add_argument("--room", default="agent")
    parser.add_argument("--pack", default="starter")
    parser.add_argument("--budget-ms", type=int, default=1000)
    return trio.run(main_async, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
