"""JSON Schema (draft 2020-12) of every registered op's args and result, from the attrs classes.

`petridish protocol-schema` prints `registry_schema(server.worlds.registry())`.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

import attrs

from protocol.bounds import Bounds, bounds_of
from protocol.convert import refuses_null, without_null
from protocol.envelope import PROTOCOL_VERSION
from protocol.registry import Registry

_PRIMITIVES = {bool: {"type": "boolean"}, int: {"type": "integer"},
               float: {"type": "number"}, str: {"type": "string"}}


def type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of one annotation; attrs classes go into `defs` once and are referenced."""
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    if tp is Any or tp is typing.Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [type_schema(a, defs) for a in args]}
    if origin in (list, tuple, frozenset, set) or tp in (list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {"type": "array", "prefixItems": [type_schema(a, defs) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        return {"type": "array", "items": type_schema(args[0], defs) if args else {}}
    if origin is dict or tp is dict or origin in (typing.Mapping,):
        return {"type": "object",
                "additionalProperties": type_schema(args[1], defs) if args else {}}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if attrs.has(tp):
        name = tp.__name__ if tp.__module__.startswith("protocol.") else tp.__qualname__
        key = f"{tp.__module__.rpartition('.')[2]}.{name}"
        if key not in defs:
            defs[key] = {}  # placeholder: recursive classes terminate
            defs[key] = class_schema(tp, defs)
        return {"$ref": f"#/$defs/{key}"}
    raise TypeError(f"no JSON Schema for annotation {tp!r}")


def class_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    """The object schema of an attrs class: its fields, the required ones, no extra keys."""
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        hint = without_null(hints[field.name]) if refuses_null(cls) else hints[field.name]
        props[field.name] = with_bounds(type_schema(hint, defs), bounds_of(field))
        if field.default is attrs.NOTHING:
            required.append(field.name)
    schema: dict[str, Any] = {"type": "object", "properties": props,
                              "additionalProperties": False}
    if required:
        schema["required"] = required
    if cls.__doc__:  # its first paragraph, whatever lines it was wrapped over
        schema["description"] = " ".join(cls.__doc__.strip().split("\n\n")[0].split())
    return schema


def with_bounds(schema: dict[str, Any], b: Bounds | None) -> dict[str, Any]:
    """`schema` with the JSON Schema keywords of bounds `b` (on every alternative of an
    `anyOf`)."""
    if b is None:
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [with_bounds(s, b) for s in schema["anyOf"]]}
    kind = schema.get("type")
    out = dict(schema)
    if kind in ("integer", "number"):
        if b.lo is not None:
            out["minimum"] = b.lo
        if b.hi is not None:
            out["maximum"] = b.hi
    elif kind == "string":
        if b.length is not None:
            out["maxLength"] = b.length
        if b.nonempty:
            out["minLength"] = 1
    elif kind == "array":
        if b.length is not None:
            out["maxItems"] = b.length
        if b.each is not None:
            if "items" in out:
                out["items"] = with_bounds(out["items"], b.each)
            if "prefixItems" in out:
                out["prefixItems"] = [with_bounds(s, b.each) for s in out["prefixItems"]]
        if b.at and "prefixItems" in out:
            out["prefixItems"] = [with_bounds(s, at) for s, at in
                                  zip(out["prefixItems"], b.at, strict=True)]
    elif kind == "object":
        if b.length is not None:
            out["maxProperties"] = b.length
        if b.each is not None and "additionalProperties" in out:
            out["additionalProperties"] = with_bounds(out["additionalProperties"], b.each)
    return out


def registry_schema(registry: Registry) -> dict[str, Any]:
    """One document: for each op its role, doc, args and result schemas."""
    defs: dict[str, Any] = {}
    ops = {spec.name: {"description": spec.doc, "role": spec.role,
                       "default_to": spec.default_to,
                       "args": type_schema(spec.args, defs),
                       "result": type_schema(spec.result, defs)} for spec in registry}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Petri Dish Games protocol", "protocol": PROTOCOL_VERSION,
            "ops": ops, "$defs": defs}
