"""The three roles of the protocol, ordered: spectator (read) < agent (play) < owner (administer).

Every op names its minimum role; `hello` decides a connection's role from its token.
"""

from __future__ import annotations

ROLES: tuple[str, ...] = ("spectator", "agent", "owner")
TOKEN_ROLES = ROLES[1:]  # the roles a token is issued for: a spectator needs none
_RANK = {role: rank for rank, role in enumerate(ROLES)}


def role_at_least(role: str, required: str) -> bool:
    """True when `role` may do what `required` may; ValueError for an unknown role."""
    try:
        return _RANK[role] >= _RANK[required]
    except KeyError as exc:
        raise ValueError(f"unknown role {exc.args[0]!r}; roles are {', '.join(ROLES)}") from None
