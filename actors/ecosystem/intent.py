"""Named intent: the organism-to-slot contract a model establishes from the answers.

The mapping names 2-4 organisms as finite spans of the original `world` or `threat`
text (slots A..D in order), optionally with a role the answers state and directed
feeding links they state ("the pike eats the snails"). This is mechanical grounding in
the source text, not keyword matching. Every graph built later, including one corrected
after a fidelity review, must keep these organisms, stated roles and stated links.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from actors.ecosystem.errors import Shape
from actors.ecosystem.graph import MAX_NAME, ROLES, SPECIES_IDS, feeding_edges

MAPPED_SOURCES = ("world", "threat")


class ContractConflict(Exception):
    """Model output that breaks a stage's contract, described in our own words only."""


# Model output: unknown keys are not echoed, so no provider text reaches a diagnostic, and
# its text must be plain (no NUL, lone surrogate or control character: `plain_text`).
output_shape = Shape(lambda path, why: ContractConflict(f"{path} {why}"), echo_keys=False,
                     plain=True)


@attrs.frozen
class NamedIntent:
    """Organisms (slot, name, source, start, end, optional role) and stated links."""

    organisms: tuple[dict[str, Any], ...]
    links: tuple[tuple[str, str], ...] = ()

    def names(self) -> list[dict[str, str]]:
        """Slot and name of each organism, for model requests."""
        return [{"slot": o["slot"], "name": o["name"]} for o in self.organisms]

    def species_conflicts(self, species: list[dict[str, Any]]) -> list[str]:
        """Organisms or stated roles that `species` (graph species items) drops."""
        out = []
        kept = {s["id"]: s for s in species}
        for o in self.organisms:
            item = kept.get(o["slot"])
            if item is None or item["name"] != o["name"]:
                out.append(f"established organism {o['slot']} is missing")
            elif "role" in o and item["role"] != o["role"]:
                out.append(f"{o['slot']} must keep its established role {o['role']}")
        return out

    def conflicts(self, graph: dict[str, Any]) -> list[str]:
        """What `graph` drops of this contract (empty when it keeps all of it)."""
        edges = set(feeding_edges(graph))
        return self.species_conflicts(graph["species"]) + [
            f"established link {eater} eats {eaten} is missing"
            for eater, eaten in self.links if (eater, eaten) not in edges]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (kept outside the replay record)."""
        return {"organisms": [dict(o) for o in self.organisms],
                "links": [{"eater": a, "eaten": b} for a, b in self.links]}


def parse_mapping(data: Any, answers: dict[str, str]) -> tuple[NamedIntent, int | None]:
    """Validate a mapping response; returns it and the index of the first organism that
    repeats an earlier identity (same name or overlapping span), or None.

    Raises `ContractConflict` for any other contract fault.
    """
    out = output_shape
    out.obj(data, "", ("organisms",), ("links",))
    items = out.array(data["organisms"], "organisms", 2, len(SPECIES_IDS))
    organisms: list[dict[str, Any]] = []
    for k, item in enumerate(items):
        where = f"organisms[{k}]"
        out.obj(item, where, ("slot", "source", "start", "end"), ("role",))
        out.enum(item["slot"], f"{where}.slot", SPECIES_IDS[k:k + 1])
        source = out.enum(item["source"], f"{where}.source", MAPPED_SOURCES)
        text = answers[source]
        start = out.integer(item["start"], f"{where}.start", 0, len(text))
        end = out.integer(item["end"], f"{where}.end", start + 1, len(text))
        organism = {"slot": SPECIES_IDS[k],
                    "name": out.text(text[start:end], f"{where} span", MAX_NAME, trim=False),
                    "source": source, "start": start, "end": end}
        if "role" in item:
            organism["role"] = out.enum(item["role"], f"{where}.role", ROLES)
        organisms.append(organism)
    slots = [o["slot"] for o in organisms]
    links: list[tuple[str, str]] = []
    for k, link in enumerate(out.array(data.get("links", []), "links", 0, 12)):
        out.obj(link, f"links[{k}]", ("eater", "eaten"))
        eater = out.enum(link["eater"], f"links[{k}].eater", slots)
        eaten = out.enum(link["eaten"], f"links[{k}].eaten", [s for s in slots if s != eater])
        if (eater, eaten) in links:
            raise ContractConflict(f"links[{k}] repeats an earlier link")
        links.append((eater, eaten))
    intent = NamedIntent(tuple(organisms), tuple(links))
    for k, o in enumerate(organisms):
        for p in organisms[:k]:
            if p["name"].lower() == o["name"].lower() or (
                    p["source"] == o["source"] and o["start"] < p["end"] and p["start"] < o["end"]):
                return intent, k
    return intent, None


def palette(answers: dict[str, str], fixed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Candidate word mentions in world and threat, minus assigned or overlapping ones."""
    taken = {o["name"].lower() for o in fixed}
    out = []
    for source in MAPPED_SOURCES:
        for m in re.finditer(r"[^\W\d_][\w'-]*", answers[source]):
            overlaps = any(o["source"] == source and m.start() < o["end"] and o["start"] < m.end()
                           for o in fixed)
            if not overlaps and m.group().lower() not in taken:
                out.append({"source": source, "start": m.start(), "end": m.end(),
                            "text": m.group()})
    return out
