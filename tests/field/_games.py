"""Test glue: generated fields (cached per session) and a minimal game loop.

`Game` plays the actor's part without trio: decide with the referee, fold the event,
keep the event list. It is not an actor: no store, no revision checks beyond the
referee's, no publishing.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from actors.field import referee
from actors.field.events import Event, GameRules, JoinEvent, ManifestEvent, is_noop
from actors.field.fold import HIDDEN, State, apply_event, new_state
from actors.field.generate import Field, generate_scatter, scatter_layout
from actors.field.territory import frontier


class Refused(Exception):
    """A decision came back as a Refusal."""

    def __init__(self, refusal: referee.Refusal):
        super().__init__(f"{refusal.code}: {refusal.message}")
        self.code = refusal.code
        self.refusal = refusal


@cache
def scatter(name: str, size: int) -> Field:
    """The seed's `scatterLayout(name, size)` field, generated once per session."""
    return scatter_layout(name, size)


@cache
def scatter_seed(seed: int, size: int) -> Field:
    """A scatter field by numeric seed, generated once per session."""
    return generate_scatter(seed, size)


class Game:
    """One field played through the referee and the fold."""

    def __init__(self, field: Field, rules: GameRules | None = None, seed: int = 0):
        self.truth = field
        self.rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
        self.events: list[Event] = []
        self.state: State = new_state()
        self.t = 0
        self._fold(ManifestEvent(rev=1, t=0, manifest=field.manifest,
                                 rules=rules or GameRules()))

    def _fold(self, ev: Event) -> Event:
        self.last = ev  # the latest decision, folded or (a no-op) not
        self.before = self.state  # the state that decision was made on
        if not is_noop(ev):
            self.state = apply_event(self.state, ev)
            self.events.append(ev)
        return ev

    def _act(self, decision):
        if isinstance(decision, referee.Refusal):
            raise Refused(decision)
        return self._fold(decision)

    def tick(self) -> int:
        self.t += 1000
        return self.t

    def join(self, name: str = "player", model: str = "m-test", user: str = "tester") -> str:
        ev = self._act(referee.join(self.state, self.rng, name=name, model=model, user=user,
                                    harness="test", t=self.tick()))
        return ev.agent

    def join_at(self, tile: int, name: str = "player") -> str:
        """Seat an agent on `tile` by folding its join directly (bypassing the seat choice)."""
        agent = f"a{len(self.state.agents) + 1}"
        self._fold(JoinEvent(rev=self.state.revision + 1, t=self.tick(), agent=agent, name=name,
                             model="m-test", user="tester", harness="test", seed_tile=tile))
        return agent

    def reveal(self, agent: str, tile: int, intent: str = ""):
        return self._act(referee.reveal(self.state, self.truth, agent=agent, tile=tile,
                                        t=self.tick(), expected_revision=self.state.revision,
                                        intent=intent))

    def commit(self, agent: str, cells: list, intent: str = "test") -> dict:
        ev = self._act(referee.commit(self.state, self.truth, agent=agent, cells=cells,
                                      intent=intent, t=self.tick(),
                                      expected_revision=self.state.revision))
        return referee.commit_result(self.state, ev)

    def retract(self, agent: str, cells: list, intent: str = ""):
        return self._act(referee.retract(self.state, agent=agent, cells=cells, t=self.tick(),
                                         expected_revision=self.state.revision, intent=intent))

    def sol(self, cell: int) -> int:
        return int(self.truth.solution[cell])

    def index(self, agent: str) -> int:
        i = self.state.agent_index(agent)
        assert i is not None
        return i

    def next_tile(self, agent: str) -> list[int]:
        """Reveal the first tile of the agent's frontier if hidden; its unknown cells."""
        fr = frontier(self.state, self.index(agent))
        assert fr, "the frontier is empty"
        tile = fr[0]
        if self.state.status[tile] == HIDDEN:
            self.reveal(agent, tile)
        cells = self.state.geo.tiles[tile].cells
        return cells[self.state.values.take(cells) < 0].tolist()

    def feed(self, agent: str, cells: int, wrong_every: int) -> None:
        """Commit `cells` cells tile by tile, every `wrong_every`-th one wrong (0: none),
        then the wrong ones correctly."""
        done = k = 0
        while done < cells:
            unknown = self.next_tile(agent)
            batch, fix = [], []
            for c in unknown:
                k += 1
                if wrong_every and k % wrong_every == 0:
                    batch.append([c, 1 - self.sol(c)])
                    fix.append([c, self.sol(c)])
                else:
                    batch.append([c, self.sol(c)])
            if batch:
                self.commit(agent, batch, "feed")
                done += len(batch)
            if fix:
                self.commit(agent, fix, "fix")
                done += len(fix)


def play_random(g: Game, rng: np.random.Generator, steps: int, agents: int,
                wrong_p: float = 0.02, on_step=None) -> None:
    """Random play: reveals (mostly on the frontier), commits of whole or partial tiles with
    a few wrong values, retracts of own cells. `on_step(g, kind, agent, arg, outcome)` sees
    every decision (outcome: the event decided, or the Refused)."""
    from actors.field.fold import FORCED, GUESS, REVEALED

    names = [g.join(name=f"p{k}", user=f"u{k % 2}", model=f"m{k % 3}") for k in range(agents)]
    for _ in range(steps):
        agent = names[int(rng.integers(len(names)))]
        i = g.index(agent)
        s = g.state
        roll = rng.random()
        if roll < 0.3:
            front = [t for t in frontier(s, i) if s.status[t] == HIDDEN]
            hidden = [t for t in range(len(s.geo.tiles)) if s.status[t] == HIDDEN]
            pool = front if front and rng.random() < 0.8 else hidden
            if not pool:
                continue
            kind, arg = "reveal", int(pool[int(rng.integers(len(pool)))])
            act = g.reveal
        elif roll < 0.9:
            root = s.groups.find(i)
            mine = [t for t in range(len(s.geo.tiles)) if s.status[t] == REVEALED
                    and s.groups.find(s.revealer[t]) == root]
            if not mine:
                continue
            tile = mine[int(rng.integers(len(mine)))]
            cells = s.geo.tiles[tile].cells
            unknown = cells[s.values.take(cells) < 0]
            unknown = unknown[rng.permutation(len(unknown))]
            if rng.random() < 0.5:
                unknown = unknown[: int(rng.integers(1, len(unknown) + 1))]
            kind = "commit"
            arg = [[int(c), g.sol(int(c)) ^ int(rng.random() < wrong_p)] for c in unknown]
            act = g.commit
        else:
            src = s.source.take(np.arange(len(s.values)))
            own = np.flatnonzero((s.owner.to_array() == i) & ((src == FORCED) | (src == GUESS)))
            if not len(own):
                continue
            kind, arg = "retract", rng.choice(own, size=min(3, len(own)), replace=False).tolist()
            act = g.retract
        try:
            act(agent, arg)
            outcome = g.last
        except Refused as e:
            outcome = e
        if on_step is not None:
            on_step(g, kind, agent, arg, outcome)
