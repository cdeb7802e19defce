"""`plate_gate`: a gate is open while any object stands on a plate of its channel.

One declaration is one channel: `config = {"plates": [ids...], "gates": [ids...]}` (authored
object ids, at least one of each). State `{"open": bool}`. Phases: `beforeMovement` (a closed gate
blocks its cell for every mover, like STOP), `afterContacts` (re-evaluate occupancy after movement
and destruction). Events: `opened` / `closed` (subject: none; from/to the state; cause `plate`).
A destroyed plate or gate no longer counts; a transformed one keeps its id and its role.
"""

from __future__ import annotations

from typing import Any

from ..diagnostics import Diagnostic, join_path


def check_ids(config: Any, key: str, path: str, id_paths: dict[str, str],
              diags: list[Diagnostic]) -> None:
    """Check that `config[key]` is a non-empty list of distinct authored object ids."""
    where = join_path(path, key)
    ids = config.get(key)
    if not (isinstance(ids, list) and ids):
        diags.append(Diagnostic(where, "must be a non-empty list of object ids"))
        return
    if len(set(map(str, ids))) != len(ids):
        diags.append(Diagnostic(where, "lists an id twice"))
    for i, oid in enumerate(ids):
        if not isinstance(oid, str) or oid not in id_paths:
            diags.append(Diagnostic(join_path(where, i), f"unknown object id {oid!r}"))


def check_keys(config: Any, host: Any, path: str, diags: list[Diagnostic]) -> bool:
    """Whether `config` is an object with no fields but `host.config_keys`; the diagnostics go to
    `diags`, an unknown field's naming the fields the host type supports."""
    if not isinstance(config, dict):
        diags.append(Diagnostic(path, "must be a JSON object"))
        return False
    before = len(diags)
    has = ", ".join(sorted(host.config_keys))
    for k in sorted(set(config) - host.config_keys, key=str):
        diags.append(Diagnostic(join_path(path, str(k)), f"unknown config field ({host.type}@"
                                f"{host.version} config has: {has})"))
    return len(diags) == before


class PlateGate:
    """Host implementation of `plate_gate` version 1."""

    type = "plate_gate"
    version = 1
    schema = (("open", "bool"),)
    phases = ("beforeMovement", "afterContacts")
    config_keys = frozenset({"plates", "gates"})

    def check_config(self, config: Any, path: str, id_paths: dict[str, str],
                     diags: list[Diagnostic]) -> None:
        """Diagnostics for the static config."""
        if check_keys(config, self, path, diags):
            check_ids(config, "plates", path, id_paths, diags)
            check_ids(config, "gates", path, id_paths, diags)

    def compile(self, config: Any, id_code: dict[str, int]) -> Any:
        """Settings: (plate id codes, gate id codes), as sets."""
        return (frozenset(id_code[i] for i in config["plates"]),
                frozenset(id_code[i] for i in config["gates"]))

    def _pressed(self, settings: Any, view: Any) -> bool:
        # Two passes over the board, however many plates the channel lists (a position or
        # occupants scan per plate made a turn cost plates x things).
        plates = settings[0]
        cells = {(o[2], o[3]) for o in view.objs if o[0] in plates}
        return any((o[2], o[3]) in cells for o in view.objs if o[0] not in plates)

    def initial(self, settings: Any, view: Any) -> tuple[Any, ...]:
        """Open exactly when a plate is already pressed on the authored board."""
        return (self._pressed(settings, view),)

    def run(self, phase: str, mid: str, settings: Any, value: tuple[Any, ...], view: Any
            ) -> tuple[Any, ...]:
        """Block closed gates before movement; follow the plates after contacts."""
        if phase == "beforeMovement":
            if not value[0]:
                for o in view.objs:
                    if o[0] in settings[1]:
                        view.block(o[2], o[3])
            return value
        opened = self._pressed(settings, view)
        if opened != value[0]:
            view.report({"mechanic": mid, "type": "opened" if opened else "closed",
                         "subject": None, "from": {"open": value[0]}, "to": {"open": opened},
                         "cause": "plate", "phase": phase})
        return (opened,)
