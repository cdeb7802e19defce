"""The lobby's one event and its stored JSON: `{"type": "world_created", "kind", "id", "by"}`."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class WorldCreated:
    """World `id` of `kind` was created through the lobby by caller `by`."""

    kind: str
    id: str
    by: str


def encode(event: WorldCreated, _after: Any) -> dict[str, Any]:
    """The stored JSON of the event."""
    return {"type": "world_created", "kind": event.kind, "id": event.id, "by": event.by}


def decode(data: dict[str, Any]) -> WorldCreated:
    """The event of stored JSON."""
    return WorldCreated(data["kind"], data["id"], data["by"])
