"""The field's MCP tools and prompt, to the letter of the seed's MCP server.

The seed's tools: `start_mosaic`, `join`, `observe`, `reveal`, `commit`, `retract`,
`list_games` (today's daily game first) and `field_rules`, with the seed's arguments,
descriptions and one-line result texts; the payload goes once, as `structuredContent`
(an observation under `observation`). Each tool is the field's websocket op underneath
(server/mcp.py hosts them and sends the ops as the caller), so the same referee, bounds,
refusals and durability apply; refusal codes are the field's (`agent`, `dead`,
`stale_revision`, ...).

What MCP adds over the websocket ops:

- `start_mosaic` names the game itself (a uuid) and takes the seed's `kind`, `chunks` and
  `grow={every_minutes}`.
- An observation's known cells are delta-coded, as the seed describes: `known` is
  `{ids, values}`, `ids` the first cell id then the gaps, `values` one character per cell;
  the cell ids are the cumulative sum of `ids` (cell id = y * G + x).
- Identity: a caller with a token is its token's name. An anonymous caller (an open
  server) is nobody between calls, so `join` hands it its agent id with a key,
  `a3~<key>`: carrying that id is what makes later writes its own (nobody else can write
  as its agent). Listings show the plain id (`a3`).
- Writes without an agent id (reveal, retract) are the seed's implicit agent `a0`.
- `join` takes the harness from the client's `clientInfo`.

The tools' argument classes are in `tool_args.py`, the prompt in `prompt.py`.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import attrs

from actors.field import live
from actors.field.health import percent
from actors.field.prompt import today
from actors.field.rules_text import MCP_RULES_TEXT
from actors.field.tool_args import (
    CommitToolArgs,
    JoinToolArgs,
    ListGamesArgs,
    ObserveToolArgs,
    RetractToolArgs,
    RevealToolArgs,
    RulesToolArgs,
    StartMosaicArgs,
)
from actors.world import Refusal, Tool, ToolCall, ToolResult, with_keywords
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import field as ops
from protocol.ops.lobby import LOBBY_ID, ListArgs

KEY_SEP = "~"  # an anonymous caller's agent id: a3~<key>
GAME_ID = "^[a-zA-Z0-9_-]{1,80}$"  # the seed's gameIdSchema
AGENT_ID = "Your agent id from join."
NO_GAME = ("game_id", "there is no such game; start_mosaic starts one")
MAX_LISTED = 50  # games list_games shows


def _compact(value: Any) -> str:
    """JSON as the seed's JSON.stringify writes it (no spaces)."""
    return json.dumps(value, separators=(",", ":"))


# ---- helpers -----------------------------------------------------------------------------------

def _field(game: str) -> str | Refusal:
    if not live.GAME_ID_RE.match(game):
        return Refusal(ErrorCode.BAD_REQUEST, "game_id: 1 to 80 characters of a-z, A-Z, 0-9, "
                       "'_' and '-'", {"path": "game_id"})
    return f"field:{game}"


def _writer(call: ToolCall, agent: str | None) -> tuple[str | None, str | None]:
    """(the plain agent id, the caller name to write as): a keyed id speaks as its key."""
    if agent is None or KEY_SEP not in agent:
        return agent, None
    plain, _, key = agent.partition(KEY_SEP)
    return plain, call.keyed(key)


def _health(h: dict[str, Any] | None, note: str | None) -> str:
    out = ""
    if h:
        out = f" Health {h['state']} ({percent(h['rate'])}% wrong over {h['committed']})."
    return out + (f" {note}" if note else "")


def delta_known(known: list[list[int]]) -> dict[str, Any]:
    """`[[cell, value], ...]` (ascending cells) as the seed's delta coding: `ids` the first
    cell and then the gaps, `values` one character per cell."""
    ids, prev = [], 0
    for cell, _ in known:
        ids.append(cell - prev)
        prev = cell
    return {"ids": ids, "values": "".join(str(v) for _, v in known)}


def undelta_known(coded: dict[str, Any]) -> list[list[int]]:
    """The inverse of `delta_known` (what an agent does: a cumulative sum)."""
    out, cell = [], 0
    for gap, v in zip(coded["ids"], coded["values"], strict=True):
        cell += gap
        out.append([cell, int(v)])
    return out


# ---- the tools ---------------------------------------------------------------------------------

async def start_mosaic(call: ToolCall, a: StartMosaicArgs) -> ToolResult | Refusal:
    """Start a game under a new uuid; it generates off the server's task."""
    game = call.fresh_id()
    seed = a.seed if a.seed is not None else int(game.replace("-", "")[:13], 16)
    grow = None if a.grow is None else ops.GrowPolicy(a.grow.every_minutes * 60)
    args = ops.StartArgs(seed=seed, kind=a.kind, size=a.size, chunks=a.chunks, chunk=a.chunk,
                         guess=a.guess, depth=a.depth, grow=grow, fog=a.fog)
    result = await call.ask(f"field:{game}", "field.start", args)
    if a.kind == "scatter":
        shape = f"a {a.size} x {a.size} scatter field"
    else:
        shape = f"{a.chunks} x {a.chunks} chunks of {a.chunk} cells"
        shape += (f" on a {args.canvas} canvas, growing every {a.grow.every_minutes:g} minutes"
                  if a.grow else ", not growing")
    return ToolResult(f"Started game {game}: {shape}; it is being generated (observe answers "
                      "generating until it is ready). Call join with this game_id.",
                      {"game_id": game, "status": result.status, "revision": result.revision})


async def join(call: ToolCall, a: JoinToolArgs) -> ToolResult | Refusal:
    """Join: an agent id (keyed for an anonymous caller) and a seed tile."""
    to = _field(a.game_id)
    if isinstance(to, Refusal):
        return to
    key, caller = call.key() if call.anonymous else (None, None)
    r = await call.ask(to, "field.join", ops.JoinArgs(
        name=a.name, harness=call.client, model=a.model or "", machine_id=a.machine_id or ""),
        caller=caller)
    agent = r.agent if key is None else f"{r.agent}{KEY_SEP}{key}"
    out = {"agent": agent, "seed_tile": r.seed_tile, "revision": r.revision}
    if r.health is not None:
        out.update(health=r.health, note=r.note)
        return ToolResult(f"Rejoined game {a.game_id} as agent {agent}, which died today on "
                          f"this field.{_health(r.health, r.note)}", out)
    return ToolResult(f"Joined game {a.game_id} as agent {agent}, seated on hidden tile "
                      f"{r.seed_tile} at revision {r.revision}. Carry agent {agent} on every "
                      "reveal, commit and retract; reveal your seed tile first.", out)


def _as_seed(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` with the seed's optional keys left out when unset (`note` but at warning
    or death, `health` but for an agent, `truncated` but when cut), as its results spread
    them in."""
    return {k: v for k, v in payload.items()
            if not (k in ("note", "health") and v is None or k == "truncated" and v is False)}


async def observe(call: ToolCall, a: ObserveToolArgs) -> ToolResult | Refusal:
    """The observation, known cells delta-coded."""
    to = _field(a.game_id)
    if isinstance(to, Refusal):
        return to
    agent, _ = _writer(call, a.agent)
    obs = attrs.asdict(await call.ask(to, "field.observe", ops.ObserveArgs(agent, a.rect)),
                       recurse=False)
    obs["known"] = delta_known(obs["known"])
    grown = f", grown {obs['grown']}" if obs["grown"] else ""
    fog = ", fog" if obs["fog"] else ""
    ended = ", the game has ended" if obs["ended"] else ""  # (where the seed's text shows none)
    text = (f"Revision {obs['revision']}{ended}: {len(obs['tiles'])} of {obs['tiles_total']} "
            f"tiles listed (G {obs['G']}{grown}{fog}); reward {obs['totals']['reward']}; "
            f"{len(obs['agents'])} agents; frontier {_compact(obs['frontier'] or [])}."
            f"{_health(obs['health'], obs['note'])}")
    return ToolResult(text, {"observation": _as_seed(obs)})


async def reveal(call: ToolCall, a: RevealToolArgs) -> ToolResult | Refusal:
    """Reveal a hidden tile on the frontier."""
    to = _field(a.game_id)
    if isinstance(to, Refusal):
        return to
    agent, caller = _writer(call, a.agent)
    r = await call.ask(to, "field.reveal", ops.RevealArgs(
        a.tile, a.expected_revision, agent, a.intent), caller=caller)
    solved = [x["tile"] for x in r.solved]
    met = "".join(f" Met {m['other']}: your territories merged." for m in r.meets)
    return ToolResult(f"Revision {r.revision}: revealed tile {r.tile} with {len(r.givens)} "
                      f"givens; solved {_compact(solved)}.{met}", attrs.asdict(r))


async def commit(call: ToolCall, a: CommitToolArgs) -> ToolResult | Refusal:
    """Commit a batch; the seed's one-line verdict."""
    to = _field(a.game_id)
    if isinstance(to, Refusal):
        return to
    agent, caller = _writer(call, a.agent)
    r = await call.ask(to, "field.commit", ops.CommitArgs(
        [list(c) for c in a.cells], a.expected_revision, agent, a.intent), caller=caller)
    forced = sum(x["class"] == "forced" for x in r.accepted)
    solved = [x["tile"] for x in r.solved]
    met = "".join(f" Met {m['other']}: your territories merged." for m in r.meets)
    text = (f"Revision {r.revision}: {len(r.accepted)} accepted ({forced} forced, "
            f"{len(r.accepted) - forced} guess), {len(r.rejected)} rejected, {len(r.ignored)} "
            f"ignored; solved {_compact(solved)} for {r.reward} reward; frontier "
            f"{_compact(r.frontier)}.{met}{_health(r.health, r.note)}")
    return ToolResult(text, _as_seed(attrs.asdict(r)))


async def retract(call: ToolCall, a: RetractToolArgs) -> ToolResult | Refusal:
    """Take back your own accepted cells."""
    to = _field(a.game_id)
    if isinstance(to, Refusal):
        return to
    agent, caller = _writer(call, a.agent)
    r = await call.ask(to, "field.retract", ops.RetractArgs(
        a.cells, a.expected_revision, agent, a.intent), caller=caller)
    return ToolResult(f"Revision {r.revision}: retracted {_compact(r.retracted)}, ignored "
                      f"{len(r.ignored)}.", attrs.asdict(r))


async def list_games(call: ToolCall, _a: ListGamesArgs) -> ToolResult | Refusal:
    """Every field the lobby knows, today's daily game first (asking for it starts it)."""
    day = today(call)
    daily = live.daily_id(day)
    try:
        await call.ask(f"field:{daily}", "field.rules", ops.RulesArgs())
    except ProtocolError as error:
        if error.code != ops.FieldCode.GENERATING:
            raise
    listing = await call.ask(LOBBY_ID, "lobby.list", ListArgs(kind="field", limit=MAX_LISTED))
    games = [game_row(w, day) for w in listing.worlds]
    lines = [f"{g['game_id']} ({_describe(g)})" for g in games]
    text = (f"{len(games)} games, today's ({day.isoformat()}) first: " + "; ".join(lines) + "."
            if games else "No games yet.")
    return ToolResult(text, {"games": games, "today": day.isoformat()})


def game_row(world: Any, day: date) -> dict[str, Any]:
    """One lobby row as a game: id, day, state, revision, agents and the rest it knows."""
    game = live.game_of(world.id)
    summary = dict(world.summary or {})
    played = live.daily_date(game)
    return {"game_id": game, "day": played.isoformat() if played else None,
            "today": played == day, "state": summary.get("state", "unknown"),
            "revision": world.revision, "agents": summary.get("agents"),
            "tiles": summary.get("tiles"), "solved": summary.get("solved"),
            "G": summary.get("G"), "progress": summary.get("progress"), "loaded": world.live}


def _describe(g: dict[str, Any]) -> str:
    bits = ["today" if g["today"] else None, g["state"]]
    if g["state"] == "generating" and g["progress"]:
        bits.append(f"{g['progress']['share'] * 100:.0f}% generated")
    else:
        bits.append(f"revision {g['revision']}")
    if g["agents"] is not None:
        bits.append(f"{g['agents']} agents")
    return ", ".join(b for b in bits if b)


async def field_rules(call: ToolCall, a: RulesToolArgs) -> ToolResult | Refusal:
    """The rules as MCP agents read them (the seed's TRANSPORT paragraph), and a game's
    settings when `game_id` names one."""
    out: dict[str, Any] = {"text": MCP_RULES_TEXT}
    if a.game_id is not None:
        to = _field(a.game_id)
        if isinstance(to, Refusal):
            return to
        rules = await call.ask(to, "field.rules", ops.RulesArgs())
        out.update(guess=rules.guess, depth=rules.depth, fog=rules.fog,
                   grow=None if rules.grow is None else {
                       "every_minutes": rules.grow.every_s / 60})
    return ToolResult(MCP_RULES_TEXT, out)


# ---- the declarations --------------------------------------------------------------------------

_GAME = {"game_id": {"pattern": GAME_ID}}
_DESCRIBE_GAME = {"game_id": "The game id from list_games or start_mosaic (the daily game is "
                             "day-YYYY-MM-DD, UTC)."}

TOOLS = (
    Tool("start_mosaic", "Start a mosaic game",
         "Start a new mosaic game and get its id (a uuid). kind=field is a field of chunks x "
         "chunks chunks of `chunk` cells; with grow={every_minutes} it is allocated on a "
         "1000-cell canvas and grows a ring of chunks on a timer and whenever most tiles are "
         "revealed or solved (fog on by default); kind=scatter is one size x size field. "
         "start_mosaic no longer blocks: it answers at once while the field is generated "
         "(observe and join answer generating until it is ready). Then call join.",
         StartMosaicArgs, start_mosaic, role="agent",
         describe={"kind": "field (chunks, may grow) or scatter (one size x size field).",
                   "chunks": "The first block is chunks x chunks chunks (1 to 50; at most "
                             "1000 // chunk: the block fits the 1000-cell canvas).",
                   "chunk": "A chunk's side in cells (20 to 100).",
                   "size": "kind=scatter: the field's side in cells (14 to 200).",
                   "grow": "{every_minutes}: grow a ring this often (kind=field).",
                   "seed": "The generator's seed (default: from the game id).",
                   "guess": "accept: correct unforced cells are accepted as guesses; "
                            "reject: they are rejected with reason guess.",
                   "depth": "The referee's bifurcation depth (0 to 2).",
                   "fog": "Hide tiles your group has not reached (default: on when growing)."}),
    Tool("join", "Join a mosaic game",
         "Join a game: get your agent id and your seed tile, a hidden tile at a random spot "
         "away from everyone. Give a short name, machine_id if you have a durable one, and "
         "the model you are; your harness is read from your client's clientInfo. Every "
         "reveal, commit and retract carries the agent id join returns (without a token it "
         "carries a key after '~': it is what makes the agent yours). An agent that died "
         "today stays dead: its user or machine rejoining gets it back. " + MCP_RULES_TEXT,
         JoinToolArgs, join, role="agent",
         describe={**_DESCRIBE_GAME, "name": "A short name for your agent (1 to 80).",
                   "machine_id": "A durable id of your machine, if you have one.",
                   "model": "The model you are, e.g. claude-opus-5."}, unknown=NO_GAME),
    Tool("observe", "Observe the mosaic",
         "Read the current revision and a scope of tiles (id, x0, y0, w, h, rects, cells, m, "
         "status, agent, neighbours) with the frontier and every known cell in them "
         "(delta-coded ids plus a value string; decode by cumulative sum). On a growing field "
         "tiles_total and grown rise over time; under fog hidden tiles appear only once your "
         "group reaches them. Scope: {agent: your id} lists the tiles your group solved, "
         "everything within 24 cells of them, and your frontier (the normal call); {rect: [x, "
         "y, w, h]} lists the tiles intersecting a rectangle; no scope lists everything, "
         "allowed only on fields up to 120 cells a side. Known cells are givens of revealed "
         "tiles, cells fixed by solved neighbours, and accepted commits. With {agent} the "
         "observation also carries your health. The payload is under "
         "structuredContent.observation; cell id = y*G + x.",
         ObserveToolArgs, observe,
         describe={**_DESCRIBE_GAME, "agent": AGENT_ID,
                   "rect": "[x, y, w, h]: the tiles intersecting this rectangle."},
         unknown=NO_GAME),
    Tool("reveal", "Reveal a tile",
         "Reveal a hidden tile on your frontier (your seed tile while unsolved, or an unsolved "
         "tile sharing a cell with a tile your group solved), with a one-line intent (<=160 "
         "chars) shown verbatim to spectators: its givens become known. Carries "
         "expected_revision (on stale_revision, observe again and retry). Without agent, the "
         "write is the implicit agent a0's.",
         RevealToolArgs, reveal, role="agent",
         describe={**_DESCRIBE_GAME, "agent": AGENT_ID, "tile": "The tile id to reveal.",
                   "expected_revision": "The revision you observed.",
                   "intent": "One line: why this tile."}, unknown=NO_GAME),
    Tool("commit", "Commit cells",
         "Commit a batch of [cell_id, value] pairs inside revealed tiles, with a one-line "
         "intent (<=160 chars) stating your reason; it is shown verbatim to spectators. Each "
         "cell is accepted (correct; classified forced or guess with the rules that force "
         "it), rejected as {id, reason, v} (reason wrong: the value v you sent is not the "
         "solution; reason guess: correct but unforced, on games that reject guesses), or "
         "ignored (already known, a given, a hole, duplicate, outside revealed tiles, or "
         "outside your territory). Reports newly solved tile ids, meetings, the reward "
         "earned, your new frontier, and your health {state, rate, committed, wrong, window, "
         "died_at} with a note at warning; every wrong cell counts against your health (see "
         "the rules).",
         CommitToolArgs, commit, role="agent",
         describe={**_DESCRIBE_GAME, "agent": AGENT_ID,
                   "cells": "[[cell_id, value], ...]: cell id = y*G + x, value 0 or 1.",
                   "expected_revision": "The revision you observed.",
                   "intent": "One line: why these cells."}, unknown=NO_GAME),
    Tool("retract", "Retract cells",
         "Take back your own accepted cells on unsolved tiles (others are ignored, with why), "
         "with a one-line intent shown verbatim to spectators. Carries expected_revision. "
         "Without agent, the write is the implicit agent a0's.",
         RetractToolArgs, retract, role="agent",
         describe={**_DESCRIBE_GAME, "agent": AGENT_ID, "cells": "Cell ids to take back.",
                   "expected_revision": "The revision you observed.",
                   "intent": "One line: why."}, unknown=NO_GAME),
    Tool("list_games", "List mosaic games",
         "List the games on this server, today's daily game first (its game_id is "
         "day-YYYY-MM-DD and its day is today's UTC date; asking starts it if nobody has "
         "yet): game_id, day, state (generating, live or ended), revision, agents, tiles, "
         "solved and generation progress.",
         ListGamesArgs, list_games),
    Tool("field_rules", "Rules of a mosaic",
         "The rules of a mosaic as agents read them (with this endpoint's transport), and a "
         "game's guess policy, depth, fog and growth when game_id is given.",
         RulesToolArgs, field_rules, describe=_DESCRIBE_GAME, unknown=NO_GAME),
)

# The seed's gameIdSchema pattern (its min(1) on agent ids and names is their bounds').
TOOLS = with_keywords(TOOLS, _GAME)
