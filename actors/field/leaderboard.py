"""Leaderboards: one day's agents aggregated per user and per model, and boards merged across days.

A day's board is built from one `Tally` per agent (the fold's per-agent stats,
see `analysis.tallies`). A row per user lists the models that user ran; a row per
model lists the users that ran it. `wrong_rate` is wrong / (forced + guess +
wrong); `dead` counts agents that died (their reward stands). Rows are ordered
by reward, then key. `Ordered` pages a long board (the all-time one) with another
day's rows added, in time that grows with the page and that day, not with the board.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from itertools import islice

import attrs

MAX_NAMES = 20  # names a paged row lists (a model's users over every day are unbounded)


@attrs.frozen
class Tally:
    """One agent's contribution to a day's board."""

    agent: str
    user: str
    model: str
    forced: int
    guess: int
    wrong: int
    meets: int
    reward: int
    dead: bool


@attrs.frozen
class Row:
    """One leaderboard row (per user or per model)."""

    key: str
    forced: int = 0
    guess: int = 0
    wrong: int = 0
    wrong_rate: float = 0.0
    dead: int = 0
    meets: int = 0
    agents: int = 0
    models: tuple[str, ...] = ()  # on the user board: the models this user ran
    users: tuple[str, ...] = ()  # on the model board: the users that ran this model
    reward: int = 0
    days: int = 0


@attrs.frozen
class Boards:
    """A board per user and one per model."""

    users: tuple[Row, ...] = ()
    models: tuple[Row, ...] = ()

    def to_json(self) -> dict:
        """Plain JSON value (rows as objects, lists for tuples)."""
        return {"users": [_row_json(r) for r in self.users],
                "models": [_row_json(r) for r in self.models]}

    @classmethod
    def from_json(cls, data: dict) -> Boards:
        """Inverse of `to_json`; unknown or missing keys raise."""
        if not isinstance(data, dict) or set(data) != {"users", "models"}:
            raise ValueError("a board is {users: [...], models: [...]}")
        return cls(tuple(_row_from(r) for r in data["users"]),
                   tuple(_row_from(r) for r in data["models"]))


def _row_json(r: Row) -> dict:
    return attrs.asdict(r, value_serializer=lambda _i, _a, v: list(v) if isinstance(v, tuple) else v)


def _row_from(d: dict) -> Row:
    names = {a.name for a in attrs.fields(Row)}
    if not isinstance(d, dict) or set(d) != names:
        raise ValueError(f"a row has exactly the keys {sorted(names)}")
    return Row(**{**d, "models": tuple(d["models"]), "users": tuple(d["users"])})


def _rate(forced: int, guess: int, wrong: int) -> float:
    n = forced + guess + wrong
    return wrong / n if n else 0.0


def _add(row: Row, other: Row, days: int) -> Row:
    """`row` plus `other`'s counts; `days` is added to the row's day count."""
    forced, guess, wrong = row.forced + other.forced, row.guess + other.guess, row.wrong + other.wrong
    return attrs.evolve(
        row, forced=forced, guess=guess, wrong=wrong, wrong_rate=_rate(forced, guess, wrong),
        dead=row.dead + other.dead, meets=row.meets + other.meets,
        agents=row.agents + other.agents, reward=row.reward + other.reward,
        models=_union(row.models, other.models), users=_union(row.users, other.users),
        days=row.days + days,
    )


def _union(a: tuple[str, ...], b: Iterable[str]) -> tuple[str, ...]:
    return a + tuple(v for v in dict.fromkeys(b) if v not in a)


def _rank(r: Row) -> tuple[int, str]:
    return -r.reward, r.key


def _ordered(rows: Iterable[Row]) -> tuple[Row, ...]:
    return tuple(sorted(rows, key=_rank))


def boards_of(tallies: Iterable[Tally]) -> Boards:
    """One day's boards from its agents' tallies (each row has days = 1)."""
    by_user: dict[str, Row] = {}
    by_model: dict[str, Row] = {}
    for t in tallies:
        unit = Row(key="", forced=t.forced, guess=t.guess, wrong=t.wrong, dead=int(t.dead),
                   meets=t.meets, agents=1, reward=t.reward)
        for table, key, extra in ((by_user, t.user, {"models": (t.model,)}),
                                  (by_model, t.model, {"users": (t.user,)})):
            base = table.get(key, Row(key=key, days=1))
            table[key] = _add(base, attrs.evolve(unit, **extra), days=0)
    return Boards(_ordered(by_user.values()), _ordered(by_model.values()))


def merge_boards(boards: Sequence[Boards]) -> Boards:
    """Boards of several days merged: counts summed, name lists united, days counted."""
    merged: dict[str, dict[str, Row]] = {"users": {}, "models": {}}
    for board in boards:
        for name, rows in (("users", board.users), ("models", board.models)):
            table = merged[name]
            for r in rows:
                base = table.get(r.key, Row(key=r.key))
                table[r.key] = _add(base, r, days=r.days)
    return Boards(_ordered(merged["users"].values()), _ordered(merged["models"].values()))


class Ordered:
    """One board's rows (in board order) indexed by key, to be read a page at a time."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = rows
        self.index = {r.key: r for r in rows}

    def page(self, extra: Iterable[Row], start: int, stop: int) -> tuple[tuple[Row, ...], int]:
        """Rows `start` .. `stop - 1` of this board with `extra` (a day not merged yet)
        added as `merge_boards` would, each listing at most MAX_NAMES names; and the merged
        board's row count. The rows `extra` leaves alone keep their order, so only the
        first `stop` of them are looked at."""
        added = {r.key: _add(self.index.get(r.key, Row(key=r.key)), r, days=r.days)
                 for r in extra}
        kept = islice((r for r in self.rows if r.key not in added), stop)
        rows = heapq.nsmallest(stop, [*kept, *added.values()], key=_rank)[start:]
        total = len(self.rows) + sum(k not in self.index for k in added)
        return tuple(attrs.evolve(r, models=r.models[:MAX_NAMES], users=r.users[:MAX_NAMES])
                     for r in rows), total
