"""Tiny level builder for tests: a picture of rows plus a legend; and levels, packs and share
links the tests share, built with it.

Legend values in lower case are object nouns, in upper case text words. Extra entries (for
stacking) and mechanics can be appended.
"""

from __future__ import annotations

import base64
import sys
import zlib
from collections.abc import Callable
from typing import Any

from actors.puzzle.share import canonical_json

BASE_LEGEND = {
    "b": "baba", "k": "keke", "f": "flag", "r": "rock", "w": "wall", "~": "water", "y": "key",
    "d": "door", "p": "plate", "g": "gate", "t": "tile", "s": "skull", "l": "lava",
    "B": "BABA", "K": "KEKE", "F": "FLAG", "R": "ROCK", "W": "WALL", "T": "TEXT", "=": "IS",
    "&": "AND", "!": "NOT", "Y": "YOU", "V": "WIN", "S": "STOP", "P": "PUSH", "L": "PULL",
    "M": "MOVE", "0": "SINK", "D": "DEFEAT", "H": "HOT", "E": "MELT", "O": "OPEN", "C": "SHUT",
    "X": "WEAK", "A": "FLOAT", "U": "WATER", "Q": "SKULL",
}


def make_level(rows: list[str], legend: dict[str, str] | None = None, *,
               profile: str = "classic", extra: list[dict[str, Any]] | None = None,
               mechanics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Level JSON for the picture `rows` ('.' is empty); ids are `<char><n>` in reading order."""
    table = {**BASE_LEGEND, **(legend or {})}
    objects: list[dict[str, Any]] = []
    text: list[dict[str, Any]] = []
    for y, row in enumerate(rows):
        for x, char in enumerate(row):
            if char == ".":
                continue
            name = table[char]
            if name.islower():
                objects.append({"id": f"{name}{len(objects) + 1}", "noun": name, "x": x, "y": y})
            else:
                text.append({"id": f"t{len(text) + 1}", "word": name.lower(), "x": x, "y": y})
    data: dict[str, Any] = {"id": "test", "width": len(rows[0]), "height": len(rows),
                            "profile": profile, "objects": objects + (extra or []), "text": text}
    if mechanics is not None:
        data["mechanics"] = mechanics
    return data


def positions(state: dict[str, Any], noun: str) -> list[tuple[int, int]]:
    """Where the objects of `noun` are in a snapshot, sorted."""
    return sorted((o["x"], o["y"]) for o in state["objects"] if o.get("noun") == noun)


def mechanic_level(profile: str = "classic") -> dict[str, Any]:
    """A small level with one plate_gate channel and one frail_floor tile.

    Objects: baba1 (0,2), plate2 (1,2), tile3 (2,2), gate4 (5,2), flag5 (6,2), rock6 (3,3);
    text BABA IS YOU on row 0, FLAG IS WIN on row 4 and a loose ROCK ... PUSH on row 5.
    """
    return make_level(
        ["B=Y....", ".......", "bpt..gf", "...r...", "F=V....", "R=.P..."],
        profile=profile,
        mechanics=[
            {"id": "gate", "type": "plate_gate", "version": 1,
             "config": {"plates": ["plate2"], "gates": ["gate4"]},
             "state_schema": {"open": "bool"}},
            {"id": "frail", "type": "frail_floor", "version": 1, "config": {"tile": "tile3"},
             "state_schema": {"stage": "enum:intact|pressed|cracking|broken"}},
        ])


def refused(result: Any) -> str | None:
    """The refusal code of an engine result (`actors.world.Refusal`), None when accepted."""
    from actors.world import Refusal
    return str(result.code) if isinstance(result, Refusal) else None


def accepted(result: Any) -> bool:
    """Whether an engine call was accepted (a result dict, not a `Refusal`)."""
    return refused(result) is None


def crowd_level() -> dict[str, Any]:
    """Forty pushable rocks and no WIN: more states than a few seconds of search exhaust,
    so a search of it runs out its whole budget (`unknown`)."""
    data = make_level(["B=Y" + "." * 9] + ["." + "r." * 5 + "." for _ in range(8)]
                      + ["b" + "." * 11])
    data["text"] += [{"id": "tr", "word": "rock", "x": 5, "y": 0},
                     {"id": "ti", "word": "is", "x": 6, "y": 0},
                     {"id": "tp", "word": "push", "x": 7, "y": 0}]
    data["id"] = "crowd"
    return data


def many_rules_level() -> dict[str, Any]:
    """Sixteen nouns joined by AND, each IS every property and noun: 576 rule sentences from
    165 words (three rows), over the engine's 512, and one baba."""
    from actors.puzzle.words import NOUNS, PROPERTIES

    def joined(words: list[str]) -> list[str]:
        return [w for word in words for w in ("and", word)][1:]

    predicates = [*PROPERTIES, *NOUNS]
    rows = [joined(list(NOUNS[:16])) + ["is"] + joined(predicates[k:k + 15])
            for k in range(0, len(predicates), 15)]
    text = [{"id": f"t{y}-{x}", "word": word, "x": x, "y": y}
            for y, row in enumerate(rows) for x, word in enumerate(row)]
    return {"id": "many", "width": 64, "height": 4, "text": text,
            "objects": [{"id": "b", "noun": "baba", "x": 0, "y": 3}]}


def lines_run(action: Callable[[], object]) -> int:
    """How many Python lines `action` executes: a measure of work that no clock enters."""
    count = 0

    def trace(_frame: object, event: str, _arg: object) -> Callable[..., object]:
        nonlocal count
        count += event == "line"
        return trace

    before = sys.gettrace()
    sys.settrace(trace)
    try:
        action()
    finally:
        sys.settrace(before)
    return count


def sample_pack() -> dict[str, Any]:
    """Two plain levels (one without a profile) and one with a plate_gate mechanic."""
    plain = make_level(["B=Y.", "b..f", "F=V."])
    plain.pop("profile")
    plain["id"] = "one"
    keke = make_level(["B=Y.", "b..f", "F=V."], profile="keke")
    keke["id"] = "two"
    gated = mechanic_level()
    gated["id"] = "three"
    return {"name": "Sample", "version": "1.2.0", "profile": "keke",
            "mechanics": ["plate_gate", "frail_floor"], "levels": [plain, keke, gated]}


def link_of(data: dict[str, Any], **fields: Any) -> str:
    """A share link of a pack around level data, with other pack `fields` (either may be
    invalid: made by hand)."""
    pack = {"name": "mine", "version": "1", "levels": [data], **fields}
    return "pd1." + base64.urlsafe_b64encode(zlib.compress(canonical_json(pack))).rstrip(
        b"=").decode()


OWN_LEVEL = {**make_level(["B=Y..", "b...f", "F=W.."]), "id": "mine"}  # valid, one's own
