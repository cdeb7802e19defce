"""The referee's decisions against brute-force recomputation on random games, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.field import referee
from actors.field.events import CommitEvent, GameRules, RevealEvent
from actors.field.fold import HIDDEN, REVEALED, SOLVED, State
from actors.field.geometry import Geometry
from actors.field.propagate import propagate
from actors.field.territory import frontier
from tests.field._games import Game, Refused, play_random, scatter
from tests.utf16 import edges


def _adjacency(s: State) -> list[set[int]]:
    """Tiles sharing a cell, from the tiles' cell sets alone."""
    owners: dict[int, list[int]] = {}
    for t, tg in enumerate(s.geo.tiles):
        for c in tg.cells.tolist():
            owners.setdefault(c, []).append(t)
    adj: list[set[int]] = [set() for _ in s.geo.tiles]
    for ts in owners.values():
        for a in ts:
            adj[a].update(b for b in ts if b != a)
    return adj


class Brute:
    """Status, solvers, groups and frontiers recomputed from the events and the cells."""

    def __init__(self, g: Game):
        self.adj = _adjacency(g.state)
        self.revealed: set[int] = set()
        self.solver: dict[int, str] = {}

    def groups(self, s: State) -> dict[str, frozenset[str]]:
        """Agents joined through adjacent tiles they solved: connected components."""
        parent = {a.id: a.id for a in s.agents}

        def find(a: str) -> str:
            while parent[a] != a:
                a = parent[a]
            return a
        for t, a in self.solver.items():
            for n in self.adj[t]:
                if n in self.solver:
                    parent[find(a)] = find(self.solver[n])
        comp: dict[str, set[str]] = {}
        for a in parent:
            comp.setdefault(find(a), set()).add(a)
        return {a: frozenset(comp[find(a)]) for a in parent}

    def frontier(self, s: State, agent: str) -> list[int]:
        members = self.groups(s)[agent]
        seeds = {a.seed_tile for a in s.agents if a.id in members}
        out = {t for t in seeds if t not in self.solver}
        for t, a in self.solver.items():
            if a in members:
                out.update(n for n in self.adj[t] if n not in self.solver)
        return sorted(out)

    def update(self, s: State, ev: object) -> None:
        if isinstance(ev, RevealEvent):
            self.revealed.add(ev.tile)
        known = s.values.to_array() >= 0
        for t in sorted(self.revealed - set(self.solver)):
            if known[s.geo.tiles[t].cells].all():
                self.solver[t] = ev.agent


def _check(brute: Brute, g: Game, kind: str, agent: str, arg, outcome) -> None:
    """After one decision: the referee's frontier verdict, then the folded state."""
    s = g.state
    if isinstance(outcome, Refused):
        if outcome.code == "not_on_frontier":
            assert arg not in brute.frontier(s, agent)
        else:
            assert outcome.code == "dead"
        return
    if kind == "reveal":  # the brute force has not seen this event: the frontier before it
        assert arg in brute.frontier(s, agent)
    if g.events[-1] is not outcome:
        return  # a no-op commit or retract: nothing was folded
    brute.update(s, outcome)
    status = s.status.to_array()
    assert sorted(np.flatnonzero(status == SOLVED).tolist()) == sorted(brute.solver)
    assert set(np.flatnonzero(status != HIDDEN).tolist()) == brute.revealed
    assert {t: s.agents[s.solver[t]].id for t in brute.solver} == brute.solver
    groups = brute.groups(s)
    for i, a in enumerate(s.agents):
        assert frozenset(s.agents[j].id for j in s.group_of(i)) == groups[a.id]
        assert frontier(s, i) == brute.frontier(s, a.id)
    # every meet merged two groups: meets + components = agents
    assert s.totals.meets + len(set(groups.values())) == len(s.agents)


def _closure_classes(s: State, accepted) -> list[str]:
    """forced/guess of accepted cells in order, by a closure of EVERY revealed tile of the
    field (the rules text's definition) from the cells known, plus earlier guesses."""
    known = s.values.to_array()
    status = s.status.to_array()
    everything = range(len(s.geo.tiles))
    out: list[str] = []
    reached: set[int] | None = None
    for a in accepted:
        if reached is None:
            closure = propagate(s.geo, lambda c: known[c], lambda t: status[t] == REVEALED,
                                everything, s.rules.depth)
            assert closure.contradiction is None
            reached = set(closure.fixed)
        out.append("forced" if a.id in reached else "guess")
        if a.id not in reached:
            known[a.id] = a.v
            reached = None  # a guess adds a cell the closure did not have
    return out


def _check_classes(g: Game, kind: str, agent: str, arg, outcome) -> None:
    if kind == "commit" and isinstance(outcome, CommitEvent):
        assert [a.cls for a in outcome.accepted] == _closure_classes(g.before, outcome.accepted)


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from((0, 1)))
def test_forced_means_what_a_closure_of_every_revealed_tile_reaches(seed: int, depth: int
                                                                     ) -> None:
    g = Game(scatter("referee", 60), rules=GameRules(depth=depth), seed=seed)
    play_random(g, np.random.default_rng(seed), steps=80, agents=3, wrong_p=0.0,
                on_step=_check_classes)


def _cascade(field) -> tuple[int, int, int] | None:
    """Tiles (a, b) and a cell of b outside a: with both tiles revealed (givens known), the
    closure of both forces the cell, but propagation started from the cell's own tiles never
    reaches it (it wakes a only through a cell it fixes on its own, and fixes none)."""
    geo = Geometry(field.manifest)
    for a in range(len(geo.tiles)):
        for b in geo.neighbours[a]:
            known = np.full(geo.G ** 2, -1, dtype=np.int8)
            for t in (a, b):
                known[field.givens[t]] = field.solution[field.givens[t]]
            pair = {a, b}
            both = propagate(geo, known.take, pair.__contains__, (a, b))
            for c in both.fixed:
                start = geo.tiles_of(c).tolist()
                if a not in start and c not in propagate(geo, known.take, pair.__contains__,
                                                         start).fixed:
                    return a, b, c
    return None


def test_a_deduction_from_a_revealed_tile_the_batch_does_not_touch_forces_a_cell() -> None:
    # a revealed tile nobody has committed to fixes cells it shares with its neighbour, and
    # they force a cell there that the neighbour alone cannot: that commit is forced
    field = scatter("referee", 60)
    found = _cascade(field)
    assert found is not None, "no such pair of tiles on this field"
    a, b, c = found
    g = Game(field)
    p, q = g.join_at(a, "p"), g.join_at(b, "q")
    g.reveal(p, a)
    g.reveal(q, b)
    r = g.commit(q, [[c, g.sol(c)]])
    assert [(x["id"], x["class"]) for x in r["accepted"]] == [(c, "forced")]


def _brute_game(seed: int, steps: int, agents: int) -> None:
    g = Game(scatter("referee", 60), seed=seed)
    brute = Brute(g)
    play_random(g, np.random.default_rng(seed), steps=steps, agents=agents,
                on_step=lambda *step: _check(brute, *step))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_frontier_groups_and_meets_agree_with_brute_force(seed: int) -> None:
    _brute_game(seed, steps=150, agents=4)


@pytest.mark.deep
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 8))
def test_frontier_groups_and_meets_agree_with_brute_force_deep(seed: int, agents: int) -> None:
    _brute_game(seed, steps=400, agents=agents)


def test_join_is_seeded_and_keeps_agents_apart() -> None:
    field = scatter("referee", 60)
    runs = []
    for _ in range(2):
        g = Game(field, seed=9)
        for _ in range(3):
            g.join()
        runs.append([a.seed_tile for a in g.state.agents])
    assert runs[0] == runs[1] and len(set(runs[0])) == 3
    assert set(runs[0]) <= set(field.manifest.seed_tiles)


def _first_tile(g: Game, agent: str) -> tuple[int, list[int]]:
    tile = g.state.agents[g.index(agent)].seed_tile
    g.reveal(agent, tile)
    cells = g.state.geo.tiles[tile].cells
    return tile, cells[g.state.values.take(cells) < 0].tolist()


def test_commit_verdicts_in_batch_order() -> None:
    g = Game(scatter("referee", 60), seed=2)
    a = g.join()
    tile, unknown = _first_tile(g, a)
    given = next(c for c in g.state.geo.tiles[tile].cells.tolist() if g.state.values[c] >= 0)
    hole = next(c for c in range(60 * 60) if g.state.geo.is_hole(c))
    far = next(c for c in range(60 * 60) if not g.state.geo.is_hole(c)
               and all(g.state.status[t] == HIDDEN for t in g.state.geo.tiles_of(c).tolist()))
    c0, c1 = unknown[0], unknown[1]
    r = g.commit(a, [[c0, g.sol(c0)], [c1, 1 - g.sol(c1)], [c0, g.sol(c0)], [given, 0],
                     [hole, 1], [far, 0]])
    assert [x["id"] for x in r["accepted"]] == [c0]
    assert r["rejected"] == [{"id": c1, "reason": "wrong", "v": 1 - g.sol(c1)}]
    assert r["ignored"] == [{"id": c0, "reason": "duplicate"}, {"id": given, "reason": "given"},
                            {"id": hole, "reason": "hole"}, {"id": far, "reason": "not_revealed"}]
    assert g.state.stats[0].wrong == 1 and g.state.values[c1] == -1
    b = g.join("other")  # another group's revealed tile is not b's territory
    r = g.commit(b, [[c1, g.sol(c1)]])
    assert r["ignored"] == [{"id": c1, "reason": "not_territory"}] and g.last.accepted == ()


def test_guess_policy_reject_refuses_unforced_cells_without_counting_them_wrong() -> None:
    field = scatter("referee", 60)
    for policy in ("accept", "reject"):
        g = Game(field, rules=GameRules(guess=policy), seed=3)
        a = g.join()
        _, unknown = _first_tile(g, a)
        r = g.commit(a, [[c, g.sol(c)] for c in unknown])
        classes = {x["class"] for x in r["accepted"]}
        not_forced = [x for x in r["rejected"] if x["reason"] == "guess"]
        if policy == "accept":
            assert "guess" in classes and not not_forced  # a seed tile needs a guess
        else:
            assert classes <= {"forced"} and not_forced
            assert g.state.stats[0].wrong == 0 and g.state.stats[0].health.fill == len(
                r["accepted"])


def test_forced_cells_carry_the_rules_that_fixed_them() -> None:
    g = Game(scatter("referee", 60), seed=5)
    a = g.join()
    _, unknown = _first_tile(g, a)
    r = g.commit(a, [[c, g.sol(c)] for c in unknown])
    for x in r["accepted"]:
        assert (x["class"] == "forced") == bool(x["rules"])
        assert set(x["rules"]) <= {"run", "balance", "unique", "branch"}
    assert r["solved"] and r["reward"] == sum(s["reward"] for s in r["solved"])


def test_retract_takes_back_only_own_cells_on_unsolved_tiles() -> None:
    g = Game(scatter("referee", 60), seed=6)
    a = g.join()
    _, unknown = _first_tile(g, a)
    half = unknown[: len(unknown) // 2]
    g.commit(a, [[c, g.sol(c)] for c in half])
    ev = g.retract(a, [half[0], half[0], unknown[-1]])
    assert ev.retracted == (half[0],)
    assert [x.reason for x in ev.ignored] == ["duplicate", "not_yours"]
    assert g.state.values[half[0]] == -1 and g.state.stats[0].retracted == 1


@pytest.mark.parametrize(("call", "code"), [
    (lambda g, a: g.commit(a, [[0, 2]]), "bad_cell"),
    (lambda g, a: g.commit(a, [[-1, 0]]), "bad_cell"),
    (lambda g, a: g.commit(a, [[0]]), "bad_cell"),
    (lambda g, a: g.commit(a, [[True, 0]]), "bad_cell"),
    (lambda g, a: g.commit(a, [[0, 0]] * (referee.MAX_BATCH + 1)), "too_large"),
    (lambda g, a: g.commit(a, [], intent="x" * (referee.MAX_INTENT + 1)), "bad_request"),
    (lambda g, a: g.commit("a9", [[0, 0]]), "agent"),
    (lambda g, a: g.reveal(a, 10**6), "bad_tile"),
    (lambda g, a: g.retract(a, ["x"]), "bad_cell"),
])
def test_bad_input_is_refused_and_changes_nothing(call, code: str) -> None:
    g = Game(scatter("referee", 60))
    a = g.join()
    before = g.state
    with pytest.raises(Refused) as exc:
        call(g, a)
    assert exc.value.code == code and g.state is before


NAME_SAYS = f"bad_request: args.name: a name has 1..{referee.MAX_NAME} characters"
INTENT_SAYS = f"bad_request: an intent has at most {referee.MAX_INTENT} characters"


@pytest.mark.parametrize(("call", "n", "says"), [
    (lambda g, a, text: g.join(name=text), referee.MAX_NAME, NAME_SAYS),
    (lambda g, a, text: g.commit(a, [], intent=text), referee.MAX_INTENT, INTENT_SAYS),
    (lambda g, a, text: g.retract(a, [], intent=text), referee.MAX_INTENT, INTENT_SAYS),
    (lambda g, a, text: g.reveal(a, g.state.agents[0].seed_tile, intent=text),
     referee.MAX_INTENT, INTENT_SAYS),
])
def test_names_and_intents_count_utf16_code_units(call, n: int, says: str) -> None:
    """As the seed's zod counts: n - 1 letters and an emoji are one character too many."""
    for text, accepted in edges(n):
        g = Game(scatter("referee", 60))
        a = g.join()
        if accepted:
            call(g, a, text)
        else:
            with pytest.raises(Refused, match=rf"^{says}$"):
                call(g, a, text)


def test_a_join_name_out_of_bounds_names_its_arg() -> None:
    """Like the converter's refusals: `args.name` in the message and in `detail.path` (the
    protocol refuses such a name before the referee; the referee guards other callers)."""
    g = Game(scatter("referee", 60))
    for name in ("", "a" * (referee.MAX_NAME + 1)):
        r = referee.join(g.state, np.random.default_rng(0), name=name, model="", user="",
                         harness="", t=0)
        assert (r.code, r.message, r.detail) == (
            "bad_request", f"args.name: a name has 1..{referee.MAX_NAME} characters",
            {"path": "args.name"})


def test_reveal_refusals_and_stale_revisions() -> None:
    g = Game(scatter("referee", 60))
    a = g.join()
    seed = g.state.agents[0].seed_tile
    off = next(t for t in range(len(g.state.geo.tiles)) if t != seed
               and seed not in g.state.geo.neighbours[t])
    r = referee.reveal(g.state, g.truth, agent=a, tile=off, t=0)
    assert r.code == "not_on_frontier"
    g.reveal(a, seed)
    assert referee.reveal(g.state, g.truth, agent=a, tile=seed, t=0).code == "not_hidden"
    r = referee.commit(g.state, g.truth, agent=a, cells=[], intent="", t=0,
                       expected_revision=g.state.revision - 1)
    assert r.code == "stale_revision" and r.detail == {"revision": g.state.revision}


def test_random_games_do_meet() -> None:
    # the brute-force comparison above is only as good as the games it sees: they merge groups
    meets = solved = 0
    for seed in range(3):
        g = Game(scatter("referee", 60), seed=seed)
        play_random(g, np.random.default_rng(seed), steps=150, agents=4)
        meets, solved = meets + g.state.totals.meets, solved + g.state.totals.solved
    assert meets >= 2 and solved >= 15


def test_the_configured_depth_reaches_the_classification() -> None:
    counts = {}
    for depth in (0, 1):
        g = Game(scatter("referee", 60), rules=GameRules(depth=depth), seed=1)
        play_random(g, np.random.default_rng(1), steps=100, agents=2, wrong_p=0.0)
        accepted = [a for ev in g.events if isinstance(ev, CommitEvent) for a in ev.accepted]
        counts[depth] = (sum("branch" in a.rules for a in accepted),
                         sum(a.cls == "guess" for a in accepted))
    assert counts[0][0] == 0 and counts[1][0] > 0  # bifurcation only when configured
    assert counts[1][1] < counts[0][1]  # and it turns guesses into forced cells


def test_an_agent_may_play_its_seed_tile_after_another_group_revealed_it() -> None:
    g = Game(scatter("referee", 60), seed=2)
    a, b = g.join("a"), g.join("b")
    seed_b = g.state.agents[1].seed_tile
    # fold a reveal of b's seed tile by a directly (as if a's frontier had reached it)
    g._fold(RevealEvent(rev=g.state.revision + 1, t=0, agent=a, tile=seed_b, step=(),
                        givens=tuple((int(c), g.sol(int(c))) for c in g.truth.givens[seed_b])))
    cells = g.state.geo.tiles[seed_b].cells
    c = int(cells[g.state.values.take(cells) < 0][0])
    assert [x["id"] for x in g.commit(b, [[c, g.sol(c)]])["accepted"]] == [c]
    other = next(t for t in range(len(g.state.geo.tiles)) if t not in (seed_b,)
                 and g.state.status[t] == HIDDEN and t != g.state.agents[0].seed_tile)
    g._fold(RevealEvent(rev=g.state.revision + 1, t=0, agent=a, tile=other, step=(),
                        givens=tuple((int(x), g.sol(int(x))) for x in g.truth.givens[other])))
    cells = g.state.geo.tiles[other].cells
    c = next(int(x) for x in cells[g.state.values.take(cells) < 0]
             if all(t == other or g.state.status[t] == HIDDEN for t in g.state.geo.tiles_of(int(x))))
    assert g.commit(b, [[c, g.sol(c)]])["ignored"] == [{"id": c, "reason": "not_territory"}]
