"""The op registry, the schema of every op, and the docs that must name every op and code."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from protocol.errors import ErrorCode, ProtocolError
from protocol.registry import OpSpec, Registry
from protocol.schema import registry_schema
from server.worlds import registry as default_registry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


@attrs.frozen
class Args:
    n: int


@attrs.frozen
class Result:
    ok: bool


def test_registry_refuses_duplicates_and_bad_specs() -> None:
    registry = Registry([OpSpec("demo.run", Args, Result, "agent", "Run.")])
    assert registry.get("demo.run").kind == "demo"
    with pytest.raises(ValueError, match=r"^op 'demo.run' is already registered$"):
        registry.add(OpSpec("demo.run", Args, Result, "agent", "Again."))
    with pytest.raises(ValueError, match=r"^op name 'subscribe' is not '<kind>.<verb>'$"):
        OpSpec("subscribe", Args, Result, "agent", "Reserved.")
    with pytest.raises(ValueError, match=r"^op 'demo.x': unknown role 'admin'$"):
        OpSpec("demo.x", Args, Result, "admin", "Bad role.")
    with pytest.raises(TypeError, match=r"^op 'demo.y': args and result must be attrs classes$"):
        OpSpec("demo.y", dict, Result, "agent", "Not attrs.")
    with pytest.raises(ProtocolError, match=r"^there is no op 'demo.nope'$") as err:
        registry.get("demo.nope")
    assert err.value.code == ErrorCode.UNKNOWN_OP


def test_schema_covers_every_registered_op() -> None:
    registry = default_registry()
    schema = registry_schema(registry)
    assert set(schema["ops"]) == {spec.name for spec in registry}
    add = schema["ops"]["counter.add"]
    assert add["role"] == "agent"
    assert schema["$defs"]["counter.AddArgs"] == {
        "type": "object", "additionalProperties": False, "required": ["amount"],
        "properties": {"amount": {"type": "integer", "minimum": -10**12, "maximum": 10**12},
                       "note": {"type": "string", "maxLength": 16384}},
        "description": "Add `amount` to the total, with an optional note; one durable event."}
    listed = schema["$defs"]["lobby.ListResult"]["properties"]["worlds"]
    assert listed == {"type": "array", "items": {"$ref": "#/$defs/lobby.WorldInfo"}}


def test_a_description_is_the_docstrings_whole_first_paragraph() -> None:
    """A docstring's first line alone cut 36 descriptions mid-sentence ("... {kind: self,
    species, value} or"), in `petridish protocol-schema` and in the MCP tools' schemas."""
    defs = registry_schema(default_registry())["$defs"]
    assert defs["ecosystem.RulePatch"]["description"] == (
        "One of {kind: pair, pair, mode}, {kind: self, species, value} or {kind: environment, "
        "field, value} (the seed's RulePatch; other fields absent, never null).")


def test_a_class_marked_absent_not_null_offers_no_null() -> None:
    """RulePatch's optional fields may be left out, never sent as null (the converter
    refuses one: tests/ecosystem/test_ops.py), and its schema says so."""
    defs = registry_schema(default_registry())["$defs"]
    patch = defs["ecosystem.RulePatch"]
    assert patch["properties"]["pair"] == {"type": "string", "maxLength": 40}
    assert patch["required"] == ["kind"]
    assert defs["ecosystem.CreateArgs"]["properties"]["seed"]["anyOf"][1] == {"type": "null"}


def _docs_text() -> str:
    return "\n".join(p.read_text() for p in sorted(DOCS.parent.glob("*.md")))


def test_every_registered_op_is_documented() -> None:
    """Each op has a bullet "- `kind.verb` (role ..." in docs/protocol.md or docs/<kind>.md."""
    headings = re.findall(r"^- `([a-z_]+\.[a-z_]+)` \(", _docs_text(), flags=re.MULTILINE)
    missing = sorted({spec.name for spec in default_registry()} - set(headings))
    assert not missing, ("ops registered but not documented in docs/*.md (each needs a bullet "
                         f"'- `kind.verb` (role ...'): {missing}")


def test_every_error_code_is_documented() -> None:
    """Each code, world codes included, has a table row "| `code` |" in docs/*.md."""
    from protocol.errors import world_codes

    default_registry()  # imports every ops module, which registers its world codes
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", _docs_text(), flags=re.MULTILINE))
    codes = {code.value for code in ErrorCode} | set(world_codes())
    codes.discard("demo_too_late")  # the test world's, from the test below
    missing = sorted(codes - rows)
    assert not missing, f"error codes missing from docs/*.md: {missing}"


def test_world_codes_join_the_closed_set() -> None:
    from enum import StrEnum

    from protocol.errors import register_world_codes, world_codes

    @register_world_codes
    class DemoCode(StrEnum):
        TOO_LATE = "demo_too_late"

    error = ProtocolError("demo_too_late", "the demo is over", {"at": 3})
    assert error.code is DemoCode.TOO_LATE
    assert error.to_wire() == {"code": "demo_too_late", "message": "the demo is over",
                               "detail": {"at": 3}}
    assert world_codes()["demo_too_late"] is DemoCode
    with pytest.raises(ValueError, match=r"^'made_up' is not a protocol error code nor a "
                                         r"registered world code$"):
        ProtocolError("made_up", "no")
    with pytest.raises(ValueError, match=r"^error code 'forbidden' is already defined$"):
        register_world_codes(StrEnum("Clash", {"F": "forbidden"}))
    with pytest.raises(ValueError, match=r"^error code 'demo_too_late' is already defined$"):
        register_world_codes(StrEnum("Again", {"T": "demo_too_late"}))
