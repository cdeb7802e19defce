"""The compact solver state key: `bytes` holding everything that can change a future turn.

Layout: per object in board order three little-endian uint16 words, `id code`, `kind | facing << 8
| flags << 10`, `x | y << 8` (board order matters: Keke moves objects in list order; `flags` are
Keke's object layer and list membership, `layer.py`), then one byte per registered mechanic field (the index of its value in
the field's declared value list). Rules are a function of the text, so they need no bytes.

The mechanic part comes from a registry derived from the level (`registry_for`): one entry per
declared mechanic with its ordered schema and a codec version. Encoding fails closed
(`CodecError`) on mechanic state that has no registration, unknown or missing fields, invalid
values or an unsupported codec version; static config never enters the key. `decode` inverts
`encode` exactly, and `Game.restore(codec.decode_state(key))` resumes play from a key.
"""

from __future__ import annotations

from array import array
from typing import Any

import attrs

from .board import Board, Context
from .diagnostics import collect
from .layer import flags_valid
from .level import Level
from .mechanics.host import field_values
from .ruleset import KINDS
from .snapshot import board_to_state, mechanics_from_state
from .words import NOUNS, TEXT_BASE

CODEC_VERSION = 1


class CodecError(ValueError):
    """State the codec cannot encode or decode faithfully (it never guesses)."""


@attrs.frozen
class Registration:
    """How one mechanic's dynamic state is encoded: id, ordered (field, type) schema, version."""

    mechanic_id: str
    fields: tuple[tuple[str, str], ...]
    version: int = CODEC_VERSION


def registry_for(level: Level) -> tuple[Registration, ...]:
    """The codec registry a level's mechanic declarations imply, in mechanic-id order."""
    return tuple(Registration(m.id, m.state_schema) for m in level.mechanics)


class StateCodec:
    """Encodes boards of one level to `bytes` keys and back (see the module docstring)."""

    def __init__(self, ctx: Context, registry: tuple[Registration, ...] | None = None) -> None:
        self.ctx = ctx
        self.registry = registry_for(ctx.level) if registry is None else registry
        for reg in self.registry:
            if reg.version != CODEC_VERSION:
                raise CodecError(f"mechanic {reg.mechanic_id!r}: unsupported codec version "
                                 f"{reg.version} (this codec is version {CODEC_VERSION})")
        declared = [(mid, host.schema) for mid, host, _ in ctx.mechanics]
        registered = [(r.mechanic_id, r.fields) for r in self.registry]
        if declared != registered:
            missing = sorted({m for m, _ in declared} - {m for m, _ in registered})
            extra = sorted({m for m, _ in registered} - {m for m, _ in declared})
            raise CodecError(
                "unregistered mechanic state: the registry must hold exactly the level's mechanics"
                f" with their schemas (unregistered: {missing or 'none'}; unknown: "
                f"{extra or 'none'}; or a schema differs)")
        self._values = [[field_values(t) for _, t in r.fields] for r in self.registry]
        self._width = sum(len(r.fields) for r in self.registry)

    def encode(self, board: Board) -> bytes:
        """The key of a settled board; raises `CodecError` on unregistered mechanic state."""
        words = array("H")
        for o in board.objects:
            words.extend((o[0], o[1] | o[4] << 8 | o[5] << 10, o[2] | o[3] << 8))
        key = words.tobytes()
        if not self._values and not board.mechanics:
            return key
        if len(board.mechanics) != len(self._values):
            raise CodecError(f"unregistered mechanic state: the board holds "
                             f"{len(board.mechanics)} mechanic values, the registry "
                             f"{len(self._values)}")
        tail = bytearray()
        for reg, allowed, value in zip(self.registry, self._values, board.mechanics, strict=True):
            if len(value) != len(allowed):
                raise CodecError(f"mechanic {reg.mechanic_id!r}: value has {len(value)} fields, "
                                 f"registered {len(allowed)}")
            for (name, ftype), options, v in zip(reg.fields, allowed, value, strict=True):
                if v not in options or (ftype == "bool" and not isinstance(v, bool)):
                    raise CodecError(f"mechanic {reg.mechanic_id!r} field {name!r}: value {v!r}"
                                     f" is not a registered {ftype} value")
                tail.append(options.index(v))
        return key + bytes(tail)

    def decode(self, key: bytes) -> Board:
        """The board a key encodes; raises `CodecError` on a malformed key."""
        split = len(key) - self._width
        if split < 0 or split % 6:
            raise CodecError(f"malformed key of {len(key)} bytes")
        words = array("H")
        words.frombytes(key[:split])
        objects = tuple(
            (words[i], words[i + 1] & 0xFF, words[i + 2] & 0xFF, words[i + 2] >> 8,
             (words[i + 1] >> 8) & 3, words[i + 1] >> 10)
            for i in range(0, len(words), 3))
        ctx = self.ctx
        if len({o[0] for o in objects}) != len(objects) or not all(
                o[0] < len(ctx.ids) and (o[1] < len(NOUNS) or TEXT_BASE <= o[1] < KINDS)
                and o[2] < ctx.width and o[3] < ctx.height
                and flags_valid(o[1], o[5], ctx.layered) for o in objects):
            raise CodecError("malformed key: an object id, kind, position or flag is out of "
                             "range")
        tail = key[split:]
        values = []
        pos = 0
        for allowed in self._values:
            value = []
            for options in allowed:
                if tail[pos] >= len(options):
                    raise CodecError(f"malformed key: mechanic byte {tail[pos]} out of range")
                value.append(options[tail[pos]])
                pos += 1
            values.append(tuple(value))
        return Board(objects, tuple(values))

    def encode_state(self, state: dict[str, Any]) -> bytes:
        """The key of a public snapshot (`Game.get_state()`); unknown mechanic state fails."""
        from .snapshot import state_to_board
        if "mechanics" in state and isinstance(state["mechanics"], dict):
            _, diags = collect(lambda found: mechanics_from_state(self.ctx, state["mechanics"],
                                                                  found), "mechanics")
            if diags:  # (at most MAX_DIAGNOSTICS, then STOPPED)
                raise CodecError("unregistered mechanic state: " + "; ".join(map(str, diags)))
        return self.encode(state_to_board(self.ctx, state))

    def decode_state(self, key: bytes) -> dict[str, Any]:
        """A public snapshot for `Game.restore` from a key."""
        return board_to_state(self.ctx, self.decode(key))


def create_codec(level_or_ctx: Level | Context,
                 registry: tuple[Registration, ...] | None = None) -> StateCodec:
    """A codec for a level (or an already compiled context) with its derived registry by
    default; pass `registry` to check a hand-made one (it must match the level exactly)."""
    ctx = level_or_ctx if isinstance(level_or_ctx, Context) else Context(level_or_ctx)
    return StateCodec(ctx, registry)
