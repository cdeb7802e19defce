"""Host-owned mechanic types: the only code a mechanic declaration can select.

A host type declares its version, its ordered state schema (scalar fields only: `bool` or
`enum:a|b|...`), the lifecycle phases it uses, how to check its static config, its initial state,
and `run(phase, ...)`, which returns the mechanic's new value and acts on the turn only through the
turn's narrow interface (`block`, `destroy`, `report`). Mod data can pick a type, never add one.
The codec registration (`registration`) is derived from the schema, so every dynamic field is
encoded and nothing is left to JSON key order.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..diagnostics import Diagnostic
from .frail_floor import FrailFloor
from .plate_gate import PlateGate

Value = tuple[Any, ...]
"""A mechanic's dynamic state: one value per schema field, in schema order."""


class TurnView(Protocol):
    """What a hook may see and do during a turn (implemented by `turn.Work`)."""

    ids: tuple[str, ...]
    objs: list[list[int]]  # the objects on the board now, in board order: read only

    def position(self, idx: int) -> tuple[int, int] | None:
        """Where object `idx` is now, None once destroyed."""

    def occupants(self, x: int, y: int) -> list[list[int]]:
        """The objects on a cell, in board order."""

    def floats(self, kind: int) -> bool:
        """True when objects of `kind` are FLOAT now."""

    def block(self, x: int, y: int) -> None:
        """Make a cell impassable for this turn's movement (beforeMovement only)."""

    def destroy(self, obj: list[int], cause: str) -> None:
        """Remove an object, reported in `destroyed` with `cause`."""

    def report(self, event: dict[str, Any]) -> None:
        """Add a transition record to the turn's `mechanics` events."""


class HostMechanic(Protocol):
    """The interface every host mechanic type implements."""

    type: str
    version: int
    schema: tuple[tuple[str, str], ...]
    phases: tuple[str, ...]

    def check_config(self, config: Any, path: str, id_paths: dict[str, str],
                     diags: list[Diagnostic]) -> None:
        """Add the diagnostics of a declaration's static config to `diags` (`id_paths`:
        authored ids)."""

    def compile(self, config: Any, id_code: dict[str, int]) -> Any:
        """Static settings for play, with object ids turned into id codes."""

    def initial(self, settings: Any, view: TurnView) -> Value:
        """The state on the authored board."""

    def run(self, phase: str, mid: str, settings: Any, value: Value, view: TurnView
            ) -> Value:
        """Act at one of `phases`; returns the new value (committed at `settled`)."""


HOST_TYPES: dict[str, HostMechanic] = {m.type: m for m in (PlateGate(), FrailFloor())}


def supported_features() -> str:
    """The host's mechanic feature list, for diagnostics: `frail_floor@1, plate_gate@1`."""
    return ", ".join(f"{name}@{HOST_TYPES[name].version}" for name in sorted(HOST_TYPES))


def field_values(field_type: str) -> tuple[Any, ...]:
    """Every value a scalar field type allows, in codec order (the index is the encoded byte)."""
    if field_type == "bool":
        return (False, True)
    if field_type.startswith("enum:"):
        return tuple(field_type[5:].split("|"))
    raise ValueError(f"unsupported state field type {field_type!r}")
