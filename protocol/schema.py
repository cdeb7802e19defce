"""JSON Schema (draft 2020-12) of every registered op's args and result, from the attrs classes.

`petridish protocol-schema` prints `registry_schema(default_registry())`.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

import attrs

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
        props[field.name] = type_schema(hints[field.name], defs)
        if field.default is attrs.NOTHING:
            required.append(field.name)
    schema: dict[str, Any] = {"type": "object", "properties": props,
                              "additionalProperties": False}
    if required:
        schema["required"] = required
    if cls.__doc__:
        schema["description"] = cls.__doc__.strip().splitlines()[0]
    return schema


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
