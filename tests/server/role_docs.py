"""What the docs say each op needs: the role in its bullet (`- \\`counter.add\\` (agent)`, or a
table row `| \\`op\\` | owner |`) and whether only the world's creator may send it (a
qualifier such as `(agent, the owner)` or `(agent, the player only)`, or a sentence of
the world's page saying so for all its writes). Read by the role matrix."""

from __future__ import annotations

import re

import attrs

from protocol.registry import OpSpec
from protocol.roles import ROLES
from tests.server.server_process import REPO

DOCS = REPO / "docs"
_ROLE = "|".join(ROLES)
_BULLET = re.compile(rf"^- `([a-z_]+\.[a-z_]+)` \((?:role )?({_ROLE})\b([^)]*)\)",
                     re.MULTILINE)
_ROW = re.compile(rf"^\| `([a-z_]+\.[a-z_]+)` \|(?:[^|\n]*\|)*? *({_ROLE}) *\|",
                  re.MULTILINE)
_CREATOR = re.compile(r"\b(owner|player)\b")
# Kinds whose writes are the creator's alone, where the docs say so, and whether that holds
# only for the writes that name an agent (the field's: its agent is its joiner's).
CREATOR_WRITES = {
    "field": ("protocol.md", ("Writes need the agent role and name an agent the same "
                             "caller joined (another caller's agent: `forbidden`)"), True),
    "puzzle": ("puzzle.md", "Only the room's player (the caller who created it) writes", False),
}


def documented() -> dict[str, tuple[str, bool]]:
    """op -> (its documented role, True when only the world's creator may send it)."""
    out: dict[str, tuple[str, bool]] = {}
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        for op, role, rest in _BULLET.findall(text):
            out[op] = (role, bool(_CREATOR.search(rest)))
        for op, role in _ROW.findall(text):
            out.setdefault(op, (role, False))
    return out


def creator_writes() -> dict[str, bool]:
    """kind -> the docs still say only its creator writes (False: the sentence is gone)."""
    flat = {name: " ".join((DOCS / page).read_text().split())
            for name, (page, _, _) in CREATOR_WRITES.items()}
    return {kind: sentence in flat[kind] for kind, (_, sentence, _) in CREATOR_WRITES.items()}


def creator_only(spec: OpSpec, docs: dict[str, tuple[str, bool]],
                 create_op: str | None) -> bool:
    """True when only the creator of the op's world may send it (per the docs)."""
    if docs.get(spec.name, ("", False))[1]:  # an undocumented op: test_role_matrix says so
        return True
    if spec.kind not in CREATOR_WRITES or spec.role != "agent" or spec.name == create_op:
        return False
    return not CREATOR_WRITES[spec.kind][2] or "agent" in attrs.fields_dict(spec.args)
