"""`frail_floor`: a floor tile breaks into a hole one turn after an object leaves it.

One declaration is one tile: `config = {"tile": id}`. State `{"stage": intact|pressed|cracking|
broken}`. Phases: `beforeContacts` (a cracking tile breaks; anything not FLOAT standing on a broken
tile falls and is destroyed before SINK/DEFEAT contacts), `afterContacts` (intact -> pressed when
occupied, pressed -> cracking when left). Events: `pressed`, `cracked`, `broke` (subject: the
tile), `fell` (subject: the fallen object); cause `occupied`, `left`, `crumbled`, `hole`.
A destroyed tile keeps its stage but has no effect.
"""

from __future__ import annotations

from typing import Any

from ..diagnostics import Diagnostic, join_path
from .plate_gate import check_keys

STAGES = ("intact", "pressed", "cracking", "broken")


class FrailFloor:
    """Host implementation of `frail_floor` version 1."""

    type = "frail_floor"
    version = 1
    schema = (("stage", "enum:" + "|".join(STAGES)),)
    phases = ("beforeContacts", "afterContacts")
    config_keys = frozenset({"tile"})

    def check_config(self, config: Any, path: str, id_paths: dict[str, str],
                     diags: list[Diagnostic]) -> None:
        """Diagnostics for the static config."""
        if check_keys(config, self, path, diags) and not (
                isinstance(config.get("tile"), str) and config["tile"] in id_paths):
            diags.append(Diagnostic(join_path(path, "tile"),
                                    f"unknown object id {config.get('tile')!r}"))

    def compile(self, config: Any, id_code: dict[str, int]) -> Any:
        """Settings: the tile's id code."""
        return id_code[config["tile"]]

    def _others(self, tile: int, view: Any) -> list[list[int]] | None:
        at = view.position(tile)
        return None if at is None else [o for o in view.occupants(*at) if o[0] != tile]

    def initial(self, settings: Any, view: Any) -> tuple[Any, ...]:
        """`pressed` when something already stands on the tile, else `intact`."""
        return ("pressed" if self._others(settings, view) else "intact",)

    def _event(self, mid: str, kind: str, subject: str, old: str, new: str, cause: str,
               phase: str) -> dict[str, Any]:
        return {"mechanic": mid, "type": kind, "subject": subject, "from": {"stage": old},
                "to": {"stage": new}, "cause": cause, "phase": phase}

    def run(self, phase: str, mid: str, settings: Any, value: tuple[Any, ...], view: Any
            ) -> tuple[Any, ...]:
        """Break and swallow before contacts; track occupancy after them."""
        stage = value[0]
        others = self._others(settings, view)
        if others is None:
            return value
        tile_id = view.ids[settings]
        if phase == "beforeContacts":
            if stage == "cracking":
                view.report(self._event(mid, "broke", tile_id, stage, "broken", "crumbled",
                                        phase))
                stage = "broken"
            if stage == "broken":
                for obj in others:
                    if not view.floats(obj[1]):
                        view.report(self._event(mid, "fell", view.ids[obj[0]], stage, stage,
                                                "hole", phase))
                        view.destroy(obj, "frail_floor")
            return (stage,)
        if stage == "intact" and others:
            view.report(self._event(mid, "pressed", tile_id, stage, "pressed", "occupied", phase))
            stage = "pressed"
        elif stage == "pressed" and not others:
            view.report(self._event(mid, "cracked", tile_id, stage, "cracking", "left", phase))
            stage = "cracking"
        return (stage,)
