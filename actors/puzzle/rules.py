"""The puzzle room as a `World` (actors/world.py): `puzzle:<room id>`, one player's play of a
pack, every turn an event. Pure: the host runs `WORLD`.

* `puzzle.create` (agent) makes the room from a bundled pack's level or a data-only share link
  (the actor resolves an installed pack into its link first); the caller becomes its player.
  Only the player writes (`move`, `undo`, `reset`, `next`, `select`; another caller is
  `forbidden`), anyone reads (`view`, `history`). A write naming an `expected_revision` other
  than the room's is `stale_revision`; a refusal changes nothing.
* `puzzle.hint` (the solver, off the actor's task) and `puzzle.leaderboard` (the board over
  every room, another world) are effects of the room's actor (`actor.py`), so they are in
  neither `moves` nor `reads` here; `writable` is their check of the caller.

States are `room.Room` values, events `events.py`'s, the JSON snapshot (`snapshot`) holds the
engine's public snapshot of the board (restored inert, `snapshot.state_to_board`).
"""

from __future__ import annotations

import base64
from typing import Any

import attrs

from actors.world import Codec, Ctx, Move, Read, Refusal, StateCodec, World
from protocol.errors import ErrorCode
from protocol.ops import puzzle as ops
from protocol.ops.puzzle import MAX_MOVES, PuzzleCode

from .catalog import bundled, cannot_start, names, room_limits
from .diagnostics import bad_request, join_path
from .events import Advanced, Created, Event, Moved, Reset, Undone, decode, encode
from .game import status
from .leaderboard import Standings
from .pack import Pack, pack_of
from .render import board_json
from .room import Play, Room
from .share import ShareError, make_link, open_link
from .snapshot import board_to_state, state_to_board
from .turn import refusal


def initial(_name: str) -> Room:
    """A room that was never created."""
    return Room()


def evolve(state: Room, event: Event) -> Room:
    """The room after one event."""
    if isinstance(event, Created):
        return Room.created(event.player, event.pack, event.link, event.level, event.profile)
    play = state.play
    assert play is not None
    if isinstance(event, Moved):
        return state.with_play(play.moved(event.dir))
    if isinstance(event, Undone):
        return state.with_play(play.undone())
    if isinstance(event, Reset):
        return state.with_play(play.reset())
    return state.advanced(event.level)


# ------------------------------------------------------------------ writes


def _source(args: ops.CreateArgs) -> tuple[Pack, str, str] | Refusal:
    """(pack, its name, the argument it came from) of a create, or the refusal."""
    if args.link:
        try:
            pack = open_link(args.link)
        except ShareError as err:
            return bad_request(str(err), "args.link", err.diagnostics, share=err.code)
        return pack, pack.name, "args.link"
    try:
        pack = bundled(args.pack)
    except KeyError as err:
        return bad_request(str(err.args[0]), "args.pack", bundled=list(names()))
    return pack, args.pack, "args.pack"


def decide_create(state: Room, args: ops.CreateArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Create the room once, from a bundled pack or a share link that a room can play."""
    if state.rev:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this room exists")
    found = _source(args)
    if isinstance(found, Refusal):
        return found
    pack, name, where = found
    too_big = room_limits(pack)
    if too_big:
        return bad_request(f"a level is too big for a room: {too_big[0]}", where, too_big)
    ids = [lv.id for lv in pack.levels]
    if args.level and args.level not in ids:
        return bad_request(f"no level {args.level!r} in pack {pack.name!r}", "args.level", levels=ids)
    index = ids.index(args.level) if args.level else 0
    problem = cannot_start(pack.levels[index], args.profile, join_path("levels", index))
    if problem is not None:
        return bad_request(f"level {ids[index]!r} cannot be played: {problem}", where,
                           [problem])
    try:
        link = make_link(pack)
    except ShareError as err:  # normalized, a pack can outgrow the link it came in
        return bad_request(str(err), where, share=err.code)
    return [Created(ctx.caller.name, name, link, index, args.profile)]


def writable(state: Room, ctx: Ctx, expected: int | None) -> Refusal | None:
    """The refusal of a write by this caller at this revision, if any."""
    if not state.rev:
        return Refusal(ErrorCode.UNKNOWN_ACTOR, "this room was never created")
    if ctx.caller.name != state.player:
        return Refusal(ErrorCode.FORBIDDEN, "only the room's player may play it; anyone may "
                       "watch", {"player": state.player})
    if expected is not None and expected != state.rev:
        return Refusal(ErrorCode.STALE_REVISION, f"the room is at revision {state.rev}, not "
                       f"{expected}", {"revision": state.rev})
    return None


def decide_move(state: Room, args: ops.MoveArgs, ctx: Ctx) -> list[Event] | Refusal:
    """One turn, if the engine takes it."""
    refused = writable(state, ctx, args.expected_revision)
    if refused is not None:
        return refused
    play = state.play
    assert play is not None
    if play.won:
        return refusal(PuzzleCode.GAME_OVER)
    if len(play.moves) >= MAX_MOVES:
        return Refusal(PuzzleCode.MOVE_LIMIT, f"this level's play holds {MAX_MOVES} moves, "
                       "the most a room keeps; undo or reset")
    out = play.try_move(args.dir)
    if out.refusal is not None:
        return out.refusal
    return [Moved(args.dir)]


def decide_undo(state: Room, args: ops.StepArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Undo the last turn or reset of this level."""
    refused = writable(state, ctx, args.expected_revision)
    if refused is not None:
        return refused
    assert state.play is not None
    if not state.play.undo:
        return refusal(PuzzleCode.NOTHING_TO_UNDO)
    return [Undone()]


def decide_reset(state: Room, args: ops.StepArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Back to the level's start, unless it is there already."""
    refused = writable(state, ctx, args.expected_revision)
    if refused is not None:
        return refused
    assert state.play is not None
    if state.play.at_start():
        return Refusal(PuzzleCode.NO_CHANGE, "the level is at its start already")
    return [Reset()]


def decide_next(state: Room, args: ops.StepArgs, ctx: Ctx) -> list[Event] | Refusal:
    """On to the next level, once this one is won."""
    refused = writable(state, ctx, args.expected_revision)
    if refused is not None:
        return refused
    assert state.play is not None and state.pack is not None
    if not state.play.won:
        return Refusal(PuzzleCode.NOT_WON, "win this level first")
    if state.level + 1 >= len(state.pack.levels):
        return Refusal(PuzzleCode.LAST_LEVEL, f"this is the last level of {state.pack_name!r}")
    level = state.pack.levels[state.level + 1]
    problem = cannot_start(level, state.profile)
    if problem is not None:
        return Refusal(PuzzleCode.COMPLEXITY_BLOCKED, f"the next level, {level.id!r}, cannot "
                       f"be played: {problem.message}", {"level": level.id})
    return [Advanced()]


def decide_select(state: Room, args: ops.SelectArgs, ctx: Ctx) -> list[Event] | Refusal:
    """To another level of the pack (level select): the level's play starts afresh."""
    refused = writable(state, ctx, args.expected_revision)
    if refused is not None:
        return refused
    assert state.pack is not None
    ids = [lv.id for lv in state.pack.levels]
    if args.level not in ids:
        return bad_request(f"no level {args.level!r} in pack {state.pack_name!r}", "args.level",
                    levels=ids)
    index = ids.index(args.level)
    if index == state.level and state.play is not None and state.play.at_start():
        return Refusal(PuzzleCode.NO_CHANGE, "this level is being played from its start")
    problem = cannot_start(state.pack.levels[index], state.profile)
    if problem is not None:
        return bad_request(f"level {args.level!r} cannot be played: {problem}", "args.level",
                           [problem])
    return [Advanced(index)]


# ------------------------------------------------------------------ replies and reads


def room_view(state: Room, play: Play | None = None) -> ops.RoomView:
    """The room as replies and reads show it (`play`: another moment of this level)."""
    play = play or state.play
    assert play is not None and state.pack is not None
    level = play.level
    solved = state.standings.solved.get(state.player, frozenset())
    board = board_json(play.ctx, play.board)
    mechanics = {mid: dict(zip([n for n, _ in host.schema], value, strict=True))
                 for (mid, host, _), value in zip(play.ctx.mechanics, play.board.mechanics,
                                                  strict=True)}
    return ops.RoomView(
        revision=state.rev, player=state.player, pack=state.pack_name,
        profile=play.ctx.profile.name, level=state.level, levels=len(state.pack.levels),
        level_id=level.id, title=level.name, hint=level.hint, key=state.key(level),
        board=ops.Board(**board), moves=play.moves, won=play.won, lost=play.lost,
        mechanics=mechanics, solved=[lv.id for lv in state.pack.levels
                                     if state.key(lv) in solved],
        pack_levels=[ops.LevelEntry(lv.id, lv.name) for lv in state.pack.levels])


def result_room(state: Room, _events: Any, _args: Any) -> ops.RoomView:
    """The reply of `puzzle.create`."""
    return room_view(state)


def result_turn(state: Room, _events: Any, _args: Any) -> ops.TurnResult:
    """The reply of a turn, undo, reset or next: the room and what the step did."""
    assert state.play is not None
    return ops.TurnResult(room_view(state), dict(state.play.last))


def created(state: Room) -> Refusal | None:
    """The refusal of a read of a room that was never created, if it was not."""
    return None if state.rev else Refusal(ErrorCode.UNKNOWN_ACTOR, "this room was never created")


def answer_view(state: Room, _args: ops.ViewArgs, _ctx: Ctx) -> ops.RoomView | Refusal:
    """`puzzle.view`."""
    return created(state) or room_view(state)


def answer_history(state: Room, args: ops.HistoryArgs, _ctx: Ctx) -> ops.RoomView | Refusal:
    """`puzzle.history`: the level as it was after its first `move` moves."""
    missing = created(state)
    if missing is not None:
        return missing
    play = state.play
    assert play is not None
    if args.move > len(play.moves):
        return bad_request(f"this level has {len(play.moves)} moves so far", "args.move",
                    moves=len(play.moves))
    board = play.board_after(args.move)  # (a replay of up to 2,000 turns would stall)
    if board is None:
        return bad_request(f"the board after move {args.move} is no longer kept (the undo "
                           f"stack keeps the last {MAX_MOVES} steps)", "args.move",
                           moves=len(play.moves))
    won, lost = status(play.ctx, board)
    return room_view(state, attrs.evolve(play, board=board, moves=play.moves[:args.move],
                                         won=won, lost=lost))


def answer_link(state: Room, _args: ops.ViewArgs, _ctx: Ctx) -> ops.LinkResult | Refusal:
    """`puzzle.link`: the current level as a one-level pack's link, and the pack's."""
    missing = created(state)
    if missing is not None:
        return missing
    assert state.play is not None
    return ops.LinkResult(make_link(pack_of(state.play.level)), state.link)


def view(state: Room) -> dict[str, Any]:
    """What subscribers see: the room view (an empty object before the room exists)."""
    return attrs.asdict(room_view(state)) if state.rev else {}


# ------------------------------------------------------------------ snapshot


def dump(state: Room) -> dict[str, Any]:
    """The room as JSON: the engine's snapshot of the board, the undo keys, the standings."""
    play = state.play
    assert play is not None
    return {
        "rev": state.rev, "player": state.player, "pack": state.pack_name, "link": state.link,
        "profile": state.profile, "level": state.level,
        "board": board_to_state(play.ctx, play.board), "moves": play.moves,
        "undo": [[base64.b64encode(key).decode("ascii"), moves] for key, moves in play.undo],
        "fewest": {k: dict(v) for k, v in state.standings.fewest.items()},
        "solved": {user: sorted(keys) for user, keys in state.standings.solved.items()},
        "wins": dict(state.wins),
    }


def load(data: dict[str, Any]) -> Room:
    """The room of `dump`'s JSON; the board is restored as it is (no transform, no automaton
    step), undo keys are decoded once to check them (`codec.CodecError` if one is bad)."""
    room = Room.created(data["player"], data["pack"], data["link"], data["level"],
                        data["profile"])
    assert room.play is not None
    play = room.play
    board = state_to_board(play.ctx, data["board"])
    undo = tuple((base64.b64decode(key), moves) for key, moves in data["undo"])
    for key, _ in undo:
        play.codec.decode(key)
    won, lost = status(play.ctx, board)
    play = attrs.evolve(play, board=board, moves=data["moves"], won=won, lost=lost, undo=undo)
    standings = Standings({k: dict(v) for k, v in data["fewest"].items()},
                          {u: frozenset(keys) for u, keys in data["solved"].items()})
    return attrs.evolve(room, rev=data["rev"], play=play, standings=standings,
                        wins=dict(data["wins"]))


def _dump(state: Room) -> Any:
    return dump(state) if state.rev else {}


def _load(data: Any) -> Room:
    return load(data) if data else Room()


WORLD = World(
    kind="puzzle",
    initial=initial,
    evolve=evolve,
    codec=Codec(encode, decode),
    view=view,
    ops=ops.OPS,
    # `puzzle.hint` and `puzzle.leaderboard` are the room actor's effects: not here.
    moves={"puzzle.create": Move(decide_create, result_room),
           "puzzle.move": Move(decide_move, result_turn),
           "puzzle.undo": Move(decide_undo, result_turn),
           "puzzle.reset": Move(decide_reset, result_turn),
           "puzzle.next": Move(decide_next, result_turn),
           "puzzle.select": Move(decide_select, result_turn)},
    reads={"puzzle.view": Read(answer_view), "puzzle.history": Read(answer_history),
           "puzzle.link": Read(answer_link)},
    create="puzzle.create",
    create_role="agent",
    codes=PuzzleCode,
    snapshot=StateCodec(_dump, _load),
)
