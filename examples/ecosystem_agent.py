"""An example agent for the ecosystem, playing through `protocol/client.py` only.

    python examples/ecosystem_agent.py --url ws://127.0.0.1:8000/ws [--token T] \\
        [--run NAME] [--answers JSON] [--speed 30] [--size 32] [--seed S]

It creates a run (`ecosystem.create`; with a model configured the server answers
`setting_up` and the setup event follows), subscribes to it, plays it at `--speed` and
watches every generation's populations. When a living species falls below `--threshold`
of its founding biomass it patches the rule graph for the next generation, with the graph
version of the frame it saw as evidence, trying in turn: the species turns cooperative;
a pair where it is eaten turns to avoidance; the pressure turns to a nutrient bloom. A
refused patch (`invalid_patch`: it would break an invariant) moves on to the next idea; a
`stale_graph_version` waits for the next generation. After a patch it leaves the species
alone for COOLDOWN generations. It prints a summary as JSON and exits 0 once the run has
ended (generation 180), 2 on bad options or a server it cannot reach, 1 on other errors.
"""

from __future__ import annotations

import argparse
import json
import logging
import secrets
import sys
from pathlib import Path
from typing import Any

import trio
from websockets.exceptions import WebSocketException

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.client import Client, ClientError, RequestError

log = logging.getLogger("ecosystem_agent")
# The default world: a desert whose wolves dwindle to a few per cent of their founders.
DESERT = {"world": "A barren desert where sparse grass feeds rabbits",
          "threat": "A deadly pack of wolves hunts in severe drought", "reward": "survive"}
COOLDOWN = 12  # generations a rescued species is left alone


def eaters_of(graph: dict[str, Any], species: str) -> list[str]:
    """The pairs of `graph` where `species` is eaten (decoded from each pair's endpoints)."""
    pairs = []
    for item in graph["interactions"]:
        a, b = item["pair"].split("-")
        if (item["mode"], species) in (("a_consumes_b", b), ("b_consumes_a", a)):
            pairs.append(item["pair"])
    return pairs


def rescues(graph: dict[str, Any], species: str) -> list[dict[str, str]]:
    """Patches that might save `species`, the gentlest first (none already in force)."""
    out = []
    own = next(s for s in graph["species"] if s["id"] == species)
    if own["self"] != "cooperative":
        out.append({"kind": "self", "species": species, "value": "cooperative"})
    out += [{"kind": "pair", "pair": pair, "mode": "avoidance"}
            for pair in eaters_of(graph, species)]
    if graph["environment"]["pressure"] != "nutrient_bloom":
        out.append({"kind": "environment", "field": "pressure", "value": "nutrient_bloom"})
    return out


class Agent:
    """One agent's play of one run."""

    def __init__(self, client: Client, run: str, threshold: float) -> None:
        self.c = client
        self.to = f"ecosystem:{run}"
        self.threshold = threshold
        self.founding: dict[str, float] = {}
        self.graph: dict[str, Any] | None = None
        self.spared: dict[str, int] = {}  # species -> generation until which it is left alone
        self.patches: list[dict[str, Any]] = []
        self.last: dict[str, Any] | None = None  # the latest frame seen

    async def play(self, answers: dict[str, str], speed: int, size: int,
                   seed: int | None) -> dict[str, Any]:
        """Create, play and steer the run to its end; returns the summary."""
        args: dict[str, Any] = {"answers": answers, "size": size}
        if seed is not None:
            args["seed"] = seed
        info = await self.c.request("ecosystem.create", self.to, args)
        log.info("created %s: %s", self.to, info["status"])
        async with self.c.subscribe(self.to) as pushes:
            async for push in pushes:
                if push.kind == "snapshot":
                    view = push.data
                    if not view["created"]:
                        if view["blocked"]:
                            raise ClientError(f"the setup was blocked: {view['blocked']}")
                        continue  # the model is still setting the run up
                    self.graph, self.last = view["graph"], view["frame"]
                else:
                    for event in push.data:
                        if event["type"] == "setup":
                            self.graph = event["graph"]
                        elif event["type"] == "generation":
                            self.last = event["frame"]
                            if self.founding:
                                await self.watch(self.last)
                        elif event["type"] == "end":
                            return self.summary(event)
                if not self.founding and self.last is not None:  # set up: play
                    first = await self.c.request("ecosystem.history", self.to,
                                                 {"generation": 0})
                    self.founding = first["frames"][0]["biomass"]
                    await self.c.request("ecosystem.control", self.to,
                                         {"action": "play", "speed": speed})
        raise ClientError("the subscription ended before the run did")

    async def watch(self, frame: dict[str, Any]) -> None:
        """Patch for the first species near extinction, if any."""
        g = frame["generation"]
        for sid, alive in frame["alive"].items():
            low = frame["biomass"][sid] < self.threshold * self.founding[sid]
            if alive and low and self.spared.get(sid, -1) < g:
                await self.rescue(sid, frame)
                return

    async def rescue(self, species: str, frame: dict[str, Any]) -> None:
        """Try the rescues for `species` against the graph of `frame`."""
        version = frame["graphVersion"]
        if self.graph is None or self.graph["version"] != version:
            self.graph = (await self.c.request("ecosystem.view", self.to, {}))["view"]["graph"]
            version = self.graph["version"]
        for patch in rescues(self.graph, species):
            try:
                accepted = await self.c.request("ecosystem.patch", self.to, {
                    "patch": patch, "expected_graph_version": version})
            except RequestError as err:
                if err.code == "invalid_patch":
                    continue  # it would break an invariant: the next idea
                if err.code in ("stale_graph_version", "run_ended"):
                    return  # the graph moved or the run is over: look again next time
                raise
            log.info("generation %d: %s at %.3f of its founding biomass; patch %s",
                     frame["generation"], species,
                     frame["biomass"][species] / self.founding[species], patch)
            self.patches.append({"generation": frame["generation"], "species": species,
                                 "patch": patch, "decision": accepted["decision"]})
            self.spared[species] = frame["generation"] + COOLDOWN
            return
        self.spared[species] = frame["generation"] + COOLDOWN  # nothing left to try

    def summary(self, end: dict[str, Any]) -> dict[str, Any]:
        """What the run came to."""
        assert self.last is not None
        return {"run": self.to, "generation": self.last["generation"],
                "alive": [sid for sid, alive in self.last["alive"].items() if alive],
                "score": end["breakdown"]["total"], "patches": self.patches}


def answers_arg(text: str) -> dict[str, Any]:
    """`--answers`: a JSON object (the server checks its three answers)."""
    try:
        answers = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not JSON: {err}") from None
    if not isinstance(answers, dict):
        raise argparse.ArgumentTypeError('not a JSON object {"world", "threat", "reward"}')
    return answers


async def run(args: argparse.Namespace) -> int:
    try:
        async with Client.connect(args.url, token=args.token,
                                  client="ecosystem-agent/1.0") as client:
            agent = Agent(client, args.run, args.threshold)
            summary = await agent.play(args.answers, args.speed, args.size, args.seed)
    except (OSError, WebSocketException) as err:  # refused, or not a websocket there
        print(f"error: cannot connect to {args.url}: {err}", file=sys.stderr)
        return 2
    except ClientError as err:
        log.error("%s", err)
        return 1
    print(json.dumps(summary), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="ws://127.0.0.1:8000/ws")
    parser.add_argument("--token", default=None, help="an agent token (or a server --open)")
    parser.add_argument("--run", default=f"agent-{secrets.token_hex(4)}", help="run id")
    parser.add_argument("--answers", type=answers_arg, default=DESERT,
                        help="the three answers, JSON")
    parser.add_argument("--speed", type=int, default=30, help="generations a second, 1..30")
    parser.add_argument("--size", type=int, default=32, help="grid side, 16..64")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--threshold", type=float, default=0.2,
                        help="share of its founding biomass below which a species is rescued")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    return trio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
