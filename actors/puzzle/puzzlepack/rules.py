"""A pack world as a `World`: a pack of one's own or an installed one. Pure.

    {"type": "pack_created", "owner", "name", "profile", "link"}   ("" or the installed pack)
    {"type": "level_saved", "level": {level JSON, canonical}}
    {"type": "level_removed", "level": id}

A saved level replaces the pack's level with its id, or goes at the end. Every write checks
the level (the engine's diagnostics, paths inside the level) and what a room can play
(`catalog.check_room_level`), and that the pack still fits a share link; a refusal changes
nothing. `puzzlepack.check` is the same check as a read, for the level editor.
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.world import Codec, Ctx, Move, Read, Refusal, World
from protocol.errors import ErrorCode
from protocol.ops import puzzle as ops

from ..board import Context
from ..catalog import check_room_level, room_limits
from ..diagnostics import Diagnostic, bad_request
from ..level import Level, parse_level
from ..pack import MAX_LEVELS, Pack, pack_of
from ..share import ShareError, make_link, open_link
from ..turn import settle_initial

KIND = "puzzlepack"


@attrs.frozen
class PackCreated:
    """The pack exists, owned by `owner`; `link` holds its installed levels ("": none)."""

    owner: str
    name: str
    profile: str
    link: str


@attrs.frozen
class LevelSaved:
    """A level (canonical JSON) replaced the one with its id, or was added at the end."""

    level: dict[str, Any]


@attrs.frozen
class LevelRemoved:
    """The level with this id left the pack."""

    level: str


Event = PackCreated | LevelSaved | LevelRemoved


@attrs.frozen
class Shelf:
    """A pack world's state: revision, owner, name, default profile and levels."""

    rev: int = 0
    owner: str = ""
    name: str = ""
    profile: str = "classic"
    levels: tuple[Level, ...] = ()

    def pack(self, levels: tuple[Level, ...] | None = None) -> Pack:
        """The pack of these levels (default: the shelf's), with the features they use."""
        levels = self.levels if levels is None else levels
        features = tuple(sorted({m.type for lv in levels for m in lv.mechanics}))
        return Pack(self.name, "1", self.profile, features, levels)

    def link(self) -> str:
        """The pack's share link, "" while it holds no level."""
        return make_link(self.pack()) if self.levels else ""

    def find(self, level_id: str) -> int | None:
        """The index of the level with this id."""
        return next((i for i, lv in enumerate(self.levels) if lv.id == level_id), None)


def evolve(state: Shelf, event: Event) -> Shelf:
    """The pack after one event."""
    if isinstance(event, PackCreated):
        levels = open_link(event.link).levels if event.link else ()
        return Shelf(1, event.owner, event.name, event.profile, levels)
    if isinstance(event, LevelSaved):
        return attrs.evolve(state, rev=state.rev + 1, levels=_with(state, parse_level(
            event.level)))
    return attrs.evolve(state, rev=state.rev + 1,
                        levels=tuple(lv for lv in state.levels if lv.id != event.level))


def _with(state: Shelf, level: Level) -> tuple[Level, ...]:
    at = state.find(level.id)
    if at is None:
        return (*state.levels, level)
    return (*state.levels[:at], level, *state.levels[at + 1:])


# ------------------------------------------------------------------ writes


def decide_create(state: Shelf, args: ops.PackCreateArgs, ctx: Ctx) -> list[Event] | Refusal:
    """A new empty pack named `name`, or the pack of `link` installed (validated like any
    pack, and playable in a room); nothing is installed on a refusal."""
    if state.rev:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this pack exists")
    if not args.link:
        if not args.name.strip():
            return bad_request("a new pack needs a name", "args.name")
        return [PackCreated(ctx.caller.name, args.name, args.profile, "")]
    try:
        pack = open_link(args.link)
        link = make_link(pack)  # normalized, a pack can outgrow the link it came in
    except ShareError as err:
        return bad_request(str(err), "args.link", err.diagnostics, share=err.code)
    too_big = room_limits(pack)
    if too_big:
        return bad_request(f"a level is too big for a room: {too_big[0]}", "args.link", too_big)
    return [PackCreated(ctx.caller.name, args.name or pack.name, pack.profile, link)]


def writable(state: Shelf, ctx: Ctx, expected: int | None) -> Refusal | None:
    """The refusal of a write (or a solve) by this caller at this revision, if any."""
    if not state.rev:
        return Refusal(ErrorCode.UNKNOWN_ACTOR, "this pack was never created")
    if ctx.caller.name != state.owner:
        return Refusal(ErrorCode.FORBIDDEN, "only the pack's owner may change it or run the "
                       "solver on it; anyone may read it", {"owner": state.owner})
    if expected is not None and expected != state.rev:
        return Refusal(ErrorCode.STALE_REVISION, f"the pack is at revision {state.rev}, not "
                       f"{expected}", {"revision": state.rev})
    return None


def checked(state: Shelf, data: dict[str, Any]) -> Level | Refusal:
    """The level of `data` (the pack's profile when it names none), or the refusal naming
    every problem (`detail.diagnostics`, paths inside the level)."""
    level, diagnostics = check_room_level({"profile": state.profile, **data})
    if level is None:
        return bad_request(f"the level is not valid: {diagnostics[0]}", "args.level",
                           diagnostics)
    return level


def decide_save(state: Shelf, args: ops.SaveArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Save a valid level that a room can play, if the pack then still fits a link."""
    refused = writable(state, ctx, args.expected_revision)
    if refused is not None:
        return refused
    level = checked(state, args.level)
    if isinstance(level, Refusal):
        return level
    if not level.id:
        return bad_request("a saved level needs an id", "args.level",
                           [Diagnostic("id", "must be a non-empty string")])
    levels = _with(state, level)
    if len(levels) > MAX_LEVELS:
        return bad_request(f"a pack holds at most {MAX_LEVELS} levels", "args.level")
    try:
        make_link(state.pack(levels))
    except ShareError as err:
        return bad_request(f"the pack would not fit a share link: {err}", "args.level")
    return [LevelSaved(level.to_json())]


def decide_remove(state: Shelf, args: ops.RemoveArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Take a level out."""
    refused = writable(state, ctx, args.expected_revision)
    if refused is not None:
        return refused
    if state.find(args.level) is None:
        return _no_level(state, args.level)
    return [LevelRemoved(args.level)]


def _no_level(state: Shelf, level_id: str) -> Refusal:
    return bad_request(f"no level {level_id!r} in this pack", "args.level",
                       levels=[lv.id for lv in state.levels])


# ------------------------------------------------------------------ replies and reads


def pack_view(state: Shelf) -> ops.PackView:
    """The pack as replies and reads show it."""
    return ops.PackView(
        state.rev, state.owner, state.name, state.profile,
        [ops.PackLevelInfo(lv.id, lv.name, lv.width, lv.height, len(lv.objects),
                           len(lv.solution or "")) for lv in state.levels], state.link())


def result_pack(state: Shelf, _events: Any, _args: Any) -> ops.PackView:
    """The reply of a write."""
    return pack_view(state)


def _created(state: Shelf) -> Refusal | None:
    return None if state.rev else Refusal(ErrorCode.UNKNOWN_ACTOR, "this pack was never created")


def answer_view(state: Shelf, _args: ops.ViewArgs, _ctx: Ctx) -> ops.PackView | Refusal:
    """`puzzlepack.view`."""
    return _created(state) or pack_view(state)


def answer_level(state: Shelf, args: ops.PackLevelArgs, _ctx: Ctx) -> ops.PackLevel | Refusal:
    """`puzzlepack.level`: one level's JSON and its own share link."""
    missing = _created(state)
    if missing is not None:
        return missing
    at = state.find(args.level)
    if at is None:
        return _no_level(state, args.level)
    level = state.levels[at]
    return ops.PackLevel(level.to_json(), make_link(pack_of(level)))


def answer_check(state: Shelf, args: ops.CheckArgs, _ctx: Ctx) -> ops.CheckResult | Refusal:
    """`puzzlepack.check`: the level's diagnostics (none when a room can play it) and, when
    valid, the rules its board starts with."""
    missing = _created(state)
    if missing is not None:
        return missing
    level, diagnostics = check_room_level({"profile": state.profile, **args.level})
    rules: list[str] = []
    if level is not None:
        ctx = Context(level)
        rules = list(ctx.rules(settle_initial(ctx, level.objects).objects).sentences)
    return ops.CheckResult(level is not None, [ops.Problem(d.path, d.message)
                                               for d in diagnostics], rules)


def view(state: Shelf) -> dict[str, Any]:
    """What subscribers see: the pack view (an empty object before it exists)."""
    return attrs.asdict(pack_view(state)) if state.rev else {}


# ------------------------------------------------------------------ stored JSON


def encode(event: Event, _after: Shelf) -> dict[str, Any]:
    """The stored JSON of an event."""
    if isinstance(event, PackCreated):
        return {"type": "pack_created", **attrs.asdict(event)}
    if isinstance(event, LevelSaved):
        return {"type": "level_saved", "level": event.level}
    return {"type": "level_removed", "level": event.level}


def decode(data: dict[str, Any]) -> Event:
    """The event of stored JSON."""
    kind = data["type"]
    if kind == "pack_created":
        return PackCreated(data["owner"], data["name"], data["profile"], data["link"])
    if kind == "level_saved":
        return LevelSaved(data["level"])
    return LevelRemoved(data["level"])


WORLD = World(
    kind=KIND,
    initial=lambda _name: Shelf(),
    evolve=evolve,
    codec=Codec(encode, decode),
    view=view,
    ops=ops.PACK_OPS,
    # `puzzlepack.solve` runs the solver off the task: the actor's effect (actor.py).
    moves={"puzzlepack.create": Move(decide_create, result_pack),
           "puzzlepack.save": Move(decide_save, result_pack),
           "puzzlepack.remove": Move(decide_remove, result_pack)},
    reads={"puzzlepack.view": Read(answer_view), "puzzlepack.level": Read(answer_level),
           "puzzlepack.check": Read(answer_check)},
    create="puzzlepack.create",
    create_role="agent",
    codes=ops.PuzzleCode,
    listed=False,
)
