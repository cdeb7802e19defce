"""The world rule graph: species, roles, directed feeding links, the environment, patches.

A graph is plain JSON data (dicts and lists). `validate_rule_graph` is strict: any shape
fault raises the single message `Invalid ecosystem rule graph` (the failing path rides
on the error), while the three invariants (canonical species order, every pair once in
order, a basal feeding path) raise descriptive messages. Validation returns a clone, so
callers never share mutable state with their input.
"""

from __future__ import annotations

import copy
import math
import sys
from typing import Any

from actors.ecosystem.errors import EcosystemError, Shape

GRAPH_ERROR = "Invalid ecosystem rule graph"
PATCH_ERROR = "Invalid rule patch"

SPECIES_IDS = ("A", "B", "C", "D")
ROLES = ("producer", "grazer", "hunter", "scavenger", "omnivore")
BASAL_ROLES = ("producer", "grazer", "omnivore")
SELF_MODES = ("cooperative", "territorial", "cannibalistic", "neutral")
PAIR_MODES = ("a_consumes_b", "b_consumes_a", "competition", "mutualism", "avoidance", "neutral")
ENVIRONMENT_VOCABULARY: dict[str, tuple[str, ...]] = {
    "regeneration": ("steady", "pulsed", "depletion_feedback"),
    "pressure": ("stability", "drought", "toxin_wave", "heat_wave", "fragmentation",
                 "nutrient_bloom"),
    "volatility": ("stable", "pulsing", "chaotic"),
    "intensity": ("low", "medium", "high"),
    "duration": ("short", "medium", "long", "persistent"),
}
MAX_NAME = 40
MAX_COUNCIL_OPTIONS = 8
MAX_FOCUS = 140
MAX_INTERACTIONS = 16  # pairs a refusal names one by one: a whole list has 6 at most

_shape = Shape(lambda path, why: EcosystemError("invalid_graph", GRAPH_ERROR, path))
_patch_shape = Shape(lambda path, why: EcosystemError("invalid_patch", PATCH_ERROR, path))


def canonical_pairs(count: int) -> list[str]:
    """The pairs of the first `count` species in canonical order: A-B, A-C, ..., C-D."""
    ids = SPECIES_IDS[:count]
    return [f"{a}-{b}" for i, a in enumerate(ids) for b in ids[i + 1:]]


def feeding_edges(graph: dict[str, Any]) -> list[tuple[str, str]]:
    """Directed (eater, eaten) edges decoded from each pair's own endpoints."""
    edges = []
    for item in graph["interactions"]:
        a, b = item["pair"].split("-")
        if item["mode"] == "a_consumes_b":
            edges.append((a, b))
        elif item["mode"] == "b_consumes_a":
            edges.append((b, a))
    return edges


def default_rule_graph() -> dict[str, Any]:
    """Two species: A grazes the basal resource, B hunts A (`b_consumes_a`)."""
    return {
        "version": 1,
        "species": [
            {"id": "A", "name": "grazers", "role": "grazer", "self": "neutral"},
            {"id": "B", "name": "hunters", "role": "hunter", "self": "territorial"},
        ],
        "interactions": [{"pair": "A-B", "mode": "b_consumes_a"}],
        "environment": {"regeneration": "steady", "pressure": "stability",
                        "volatility": "stable", "intensity": "medium",
                        "duration": "persistent"},
    }


def validate_council(value: Any, path: str = "council") -> dict[str, Any]:
    """Council Choice metadata: the selected label must carry maximal probability.

    Probabilities are kept exactly as given (never renormalized); their sum may not
    exceed 1 (plus 1e-9 for rounding).
    """
    _shape.obj(value, path, ("selected", "options"), ("focus",))
    options = _shape.array(value["options"], f"{path}.options", 1, MAX_COUNCIL_OPTIONS)
    labels: list[str] = []
    for k, option in enumerate(options):
        where = f"{path}.options[{k}]"
        _shape.obj(option, where, ("label", "probability"))
        labels.append(_shape.text(option["label"], f"{where}.label", MAX_NAME, trim=False))
        _shape.number(option["probability"], f"{where}.probability", 0.0, 1.0)
    if len(set(labels)) != len(labels):
        raise EcosystemError("invalid_graph", GRAPH_ERROR, f"{path}.options")
    if math.fsum(o["probability"] for o in options) > 1.0 + 1e-9:
        raise EcosystemError("invalid_graph", GRAPH_ERROR, f"{path}.options")
    selected = _shape.enum(value["selected"], f"{path}.selected", labels)
    if "focus" in value:
        _shape.text(value["focus"], f"{path}.focus", MAX_FOCUS, trim=False)
    best = max(o["probability"] for o in options)
    if next(o["probability"] for o in options if o["label"] == selected) != best:
        raise EcosystemError(
            "invalid_graph", "Council selection does not have maximal probability",
            f"{path}.selected")
    return copy.deepcopy(dict(value))


def _pairs_error(species: int, got: str) -> str:
    return (f"Ecosystem interactions must list every canonical pair exactly once and in "
            f"order ({', '.join(canonical_pairs(species))}); got {got}")


def validate_rule_graph(value: Any) -> dict[str, Any]:
    """Validate a rule graph strictly and return a deep clone of it."""
    _shape.obj(value, "", ("version", "species", "interactions", "environment"), ("council",))
    version = _shape.integer(value["version"], "version", 1)
    species = _shape.array(value["species"], "species", 2, len(SPECIES_IDS))
    for k, item in enumerate(species):
        where = f"species[{k}]"
        _shape.obj(item, where, ("id", "name", "role", "self"))
        _shape.enum(item["id"], f"{where}.id", SPECIES_IDS)
        _shape.text(item["name"], f"{where}.name", MAX_NAME, trim=False)
        _shape.enum(item["role"], f"{where}.role", ROLES)
        _shape.enum(item["self"], f"{where}.self", SELF_MODES)
    # Every item's shape (a few constant-time checks each, as cheap as parsing it) comes
    # before the pair invariant, however long the list: shape faults are shape faults.
    interactions = _shape.array(value["interactions"], "interactions", 0, sys.maxsize)
    for k, item in enumerate(interactions):
        where = f"interactions[{k}]"
        _shape.obj(item, where, ("pair", "mode"))
        pair = item["pair"]
        if not (isinstance(pair, str) and len(pair) == 3 and pair[1] == "-"
                and pair[0] in SPECIES_IDS and pair[2] in SPECIES_IDS):
            raise EcosystemError("invalid_graph", GRAPH_ERROR, f"{where}.pair")
        _shape.enum(item["mode"], f"{where}.mode", PAIR_MODES)
    env = _shape.obj(value["environment"], "environment", tuple(ENVIRONMENT_VOCABULARY))
    for field, vocabulary in ENVIRONMENT_VOCABULARY.items():
        _shape.enum(env[field], f"environment.{field}", vocabulary)
    if "council" in value:
        validate_council(value["council"])

    ids = [item["id"] for item in species]
    expected = list(SPECIES_IDS[:len(ids)])
    if ids != expected:
        raise EcosystemError(
            "invalid_graph",
            f"Ecosystem species must be in canonical prefix order {', '.join(expected)}; "
            f"got {', '.join(ids)}", "species")
    pairs = [item["pair"] for item in interactions]
    if pairs != canonical_pairs(len(ids)):
        got = (f"({', '.join(pairs)})" if len(pairs) <= MAX_INTERACTIONS  # (a bounded message)
               else f"{len(pairs)} interactions")
        raise EcosystemError("invalid_graph", _pairs_error(len(ids), got), "interactions")
    _check_basal_paths(value)
    return {**copy.deepcopy(dict(value)), "version": version}


def _check_basal_paths(graph: Any) -> None:
    """At least one basal feeder, and every other species eats its way down to one."""
    roles = {item["id"]: item["role"] for item in graph["species"]}
    fed = {sid for sid, role in roles.items() if role in BASAL_ROLES}
    if not fed:
        raise EcosystemError(
            "invalid_graph",
            "Ecosystem rule graph needs a basal-feeding species (producer, grazer or omnivore)",
            "species")
    edges = feeding_edges(graph)
    grew = True
    while grew:  # fixed point: a species is fed when it eats a fed species
        new = {eater for eater, eaten in edges if eaten in fed} - fed
        fed |= new
        grew = bool(new)
    for sid, role in roles.items():
        if sid not in fed:
            raise EcosystemError(
                "invalid_graph",
                f"Species {sid} ({role}) has no feeding path to a basal-feeding species",
                "interactions")


# ---------------------------------------------------------------- patches


def validate_patch(value: Any, graph: dict[str, Any] | None = None) -> dict[str, Any]:
    """A RulePatch: exactly one of the pair, self or environment forms; targets must exist."""
    if not isinstance(value, dict) or "kind" not in value:
        raise EcosystemError("invalid_patch", PATCH_ERROR, "kind")
    kind = _patch_shape.enum(value["kind"], "kind", ("pair", "self", "environment"))
    if kind == "pair":
        _patch_shape.obj(value, "", ("kind", "pair", "mode"))
        _patch_shape.enum(value["pair"], "pair", canonical_pairs(len(SPECIES_IDS)))
        _patch_shape.enum(value["mode"], "mode", PAIR_MODES)
        if graph is not None and value["pair"] not in canonical_pairs(len(graph["species"])):
            raise EcosystemError("invalid_patch",
                                 f"Patch pair {value['pair']} does not exist in this graph", "pair")
    elif kind == "self":
        _patch_shape.obj(value, "", ("kind", "species", "value"))
        _patch_shape.enum(value["species"], "species", SPECIES_IDS)
        _patch_shape.enum(value["value"], "value", SELF_MODES)
        if graph is not None and value["species"] not in SPECIES_IDS[:len(graph["species"])]:
            raise EcosystemError(
                "invalid_patch", f"Patch species {value['species']} does not exist in this graph",
                "species")
    else:
        _patch_shape.obj(value, "", ("kind", "field", "value"))
        field = _patch_shape.enum(value["field"], "field", tuple(ENVIRONMENT_VOCABULARY))
        _patch_shape.enum(value["value"], "value", ENVIRONMENT_VOCABULARY[field])
    return dict(value)


def patch_target(graph: dict[str, Any], patch: dict[str, Any]) -> str:
    """The current value at the patch's target (used to revert temporary changes)."""
    if patch["kind"] == "pair":
        return next(i["mode"] for i in graph["interactions"] if i["pair"] == patch["pair"])
    if patch["kind"] == "self":
        return next(s["self"] for s in graph["species"] if s["id"] == patch["species"])
    return graph["environment"][patch["field"]]


def patch_key(patch: dict[str, Any]) -> tuple[str, str]:
    """What a patch targets: ("pair", "A-B"), ("self", "A") or ("environment", field)."""
    if patch["kind"] == "pair":
        return "pair", patch["pair"]
    if patch["kind"] == "self":
        return "self", patch["species"]
    return "environment", patch["field"]


def patch_value(patch: dict[str, Any]) -> str:
    """The value a patch writes at its target."""
    return patch["mode"] if patch["kind"] == "pair" else patch["value"]


def with_value(patch: dict[str, Any], value: str) -> dict[str, Any]:
    """The same target, written with `value` (how a temporary change reverts)."""
    out = dict(patch)
    out["mode" if patch["kind"] == "pair" else "value"] = value
    return out


def apply_patch(graph: dict[str, Any], patch: Any) -> tuple[dict[str, Any], bool]:
    """Apply a patch to a valid graph; returns (new graph, changed).

    A change increments the version exactly once; an unchanged patch returns an equal
    clone at the same version. A patch that would break an invariant is refused with
    that invariant's message and changes nothing.
    """
    patch = validate_patch(patch, graph)
    new = copy.deepcopy(graph)
    if patch_target(graph, patch) == patch_value(patch):
        return new, False
    if patch["kind"] == "pair":
        next(i for i in new["interactions"] if i["pair"] == patch["pair"])["mode"] = patch["mode"]
    elif patch["kind"] == "self":
        next(s for s in new["species"] if s["id"] == patch["species"])["self"] = patch["value"]
    else:
        new["environment"][patch["field"]] = patch["value"]
    new["version"] = graph["version"] + 1
    return validate_rule_graph(new), True
