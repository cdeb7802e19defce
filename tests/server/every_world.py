"""One world of every kind, made by one agent, for tests that send every op to a world
that exists (the fuzz test, the role matrix); and plain values that fit a JSON Schema."""

from __future__ import annotations

from typing import Any

from protocol.client import Client
from tests.field_live._live import ready
from tests.server.ws_harness import raw_client, result

DECLARED = {"lobby": "lobby:main", "puzzleboard": "puzzleboard:main",  # exist uncreated
            "admin": "admin:main"}


def targets(name: str) -> dict[str, str]:
    """The world of every kind that `create_every_world(..., name)` makes, by kind."""
    made = ("counter", "field", "ecosystem", "lab", "puzzle", "puzzlepack")
    return {**{kind: f"{kind}:{name}" for kind in made}, **DECLARED}


async def create_every_world(running: Any, agent_token: str | None, name: str,
                             field_size: int = 14) -> None:
    """Create `targets(name)` as the agent of `agent_token` (the lab, which only the owner
    may create, as the owner: without a birth loop), and wait until the field is ready
    (a field of 14 x 14 has a few tiles: `field_size` 24 seats a few)."""
    async with raw_client(running, agent_token) as setup:
        result(await setup.call("counter.create", f"counter:{name}"))
        result(await setup.call("field.start", f"field:{name}", size=field_size, seed=4))
        result(await setup.call("ecosystem.create", f"ecosystem:{name}", size=16, seed=4,
                                answers={"world": "w", "threat": "t", "reward": "r"}))
        result(await setup.call("puzzle.create", f"puzzle:{name}"))
        result(await setup.call("puzzlepack.create", f"puzzlepack:{name}", name=name))
    async with raw_client(running, running.owner_token) as setup:
        result(await setup.call("lab.create", f"lab:{name}", backlog=0))
    async with Client.connect(running.ws_url, agent_token) as c:
        await ready(c, name)


def resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `$ref`s followed."""
    while "$ref" in schema:
        schema = defs[schema["$ref"].rpartition("/")[2]]
    return schema


def valid(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A value of the right JSON type for `schema` (not necessarily meaningful)."""
    schema = resolve(schema, defs)
    if "anyOf" in schema:
        return valid(schema["anyOf"][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "integer":
        return max(schema.get("minimum", 0), 0) if schema.get("maximum", 1) >= 0 else \
            schema["maximum"]
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "string":
        return "a"
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        props = schema.get("properties", {})
        return {k: valid(props[k], defs) for k in schema.get("required", [])}
    return None
