"""The one strict converter between JSON values and the attrs classes of the protocol.

Strict means: unknown keys are refused, and no value is coerced (the string "5" is not
an int, 1 is not a bool, 1.5 is not an int, a string or an object is not a list; an int
is accepted where a float is expected). A refusal is a bad_request whose message names the JSON path of the first
bad field, e.g. `args.size: expected int`, and whose detail carries that path.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, MutableSequence, MutableSet, Sequence
from collections.abc import Set as AbstractSet
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from protocol.bounds import OutOfBounds, check
from protocol.errors import ErrorCode, ProtocolError, forget_frames

T = TypeVar("T")


def _strict_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("expected int")
    return value


def _strict_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("expected number")
    return float(value)


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError("expected string")
    return value


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError("expected boolean")
    return value


_ARRAYS = {list: list, tuple: tuple, set: set, frozenset: frozenset, Sequence: list,
           MutableSequence: list, AbstractSet: frozenset, MutableSet: set}


def _is_array(tp: Any) -> bool:
    return (get_origin(tp) or tp) in _ARRAYS


def _strict_array(tp: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """A hook taking only a JSON array for a list, tuple or set type.

    cattrs builds these from any iterable, so "ab" would pass as ["a", "b"] and an
    object as its keys; the items are still structured by cattrs (with their index in
    the error path).
    """
    args = get_args(tp)
    if (get_origin(tp) or tp) is tuple and args and args[-1] is not Ellipsis:
        items = conv.gen_structure_hetero_tuple(tp)
        size = len(args)

        def fixed(value: Any, _: Any) -> Any:
            if not isinstance(value, list) or len(value) != size:
                raise TypeError(f"expected a list of {size} items")
            return items(value, tp)

        return fixed
    build = _ARRAYS[get_origin(tp) or tp]
    as_list = list[args[0]] if args else list[Any]  # type: ignore[valid-type]
    elements = list_structure_factory(as_list, conv)

    def homogeneous(value: Any, _: Any) -> Any:
        if not isinstance(value, list):
            raise TypeError("expected list")
        structured = elements(value, as_list)
        return structured if build is list else build(structured)

    return homogeneous


_JSON_LEAVES = (int, float, str, bool, type(None), Any)


def _is_json_container(tp: Any) -> bool:
    """A list or dict type whose items are JSON leaves or such containers, at any depth:
    its values are JSON already (handlers build them from plain data)."""
    origin = get_origin(tp)
    if origin not in (list, dict):
        return False
    return all(arg in _JSON_LEAVES or _is_json_container(arg) for arg in get_args(tp))


def _as_is(value: Any) -> Any:
    return value


_ABSENT_NOT_NULL: set[type] = set()


def absent_not_null(cls: type[T]) -> type[T]:
    """Mark the attrs class `cls`: a field it makes optional may be left out but never
    sent as null (a seed's strict shapes told apart by the keys present, as a RulePatch's
    three forms are). The converter refuses a null there and leaves an unset field out;
    the schema does not offer null."""
    _ABSENT_NOT_NULL.add(cls)
    return cls


def refuses_null(cls: Any) -> bool:
    """Whether `cls` was marked `absent_not_null`."""
    return cls in _ABSENT_NOT_NULL


def without_null(tp: Any) -> Any:
    """Annotation `tp` less its `None` alternative (`str | None` -> `str`)."""
    if get_origin(tp) not in (Union, UnionType):
        return tp
    rest = tuple(a for a in get_args(tp) if a is not type(None))
    return rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007 - built from a tuple


def _null_refusing(cls: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """The class's own hook behind a check that no field of it is sent as null."""
    inner = make_dict_structure_fn(cls, conv)
    hints = typing.get_type_hints(cls)

    def structure_it(value: Any, _: Any) -> Any:
        if isinstance(value, dict):
            for key, item in value.items():
                if item is None and key in hints:
                    error = TypeError(f"expected {json_type_name(without_null(hints[key]))}")
                    error.__notes__ = [AttributeValidationNote(
                        f"Structuring class {cls.__qualname__} @ attribute {key}", key,
                        hints[key])]
                    raise ClassValidationError(f"While structuring {cls.__name__}", [error],
                                               cls)
        return inner(value, cls)

    return structure_it


def _null_omitting(cls: Any, conv: cattrs.Converter) -> Callable[[Any], Any]:
    """The class's own unstructure, its unset fields left out (so that what a server sends
    another, as a cluster forwards a call's args, structures back)."""
    inner = make_dict_unstructure_fn(cls, conv)

    def unstructure_it(value: Any) -> Any:
        return {key: item for key, item in inner(value).items() if item is not None}

    return unstructure_it


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(float, _strict_float)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(bool, _strict_bool)
    conv.register_structure_hook_factory(_is_array, _strict_array)
    conv.register_structure_hook_factory(refuses_null, _null_refusing)
    conv.register_unstructure_hook_factory(refuses_null, _null_omitting)
    # Walking a big listing item by item (an observation's tiles and known cells) was
    # most of a field observe's cost; JSON-only containers go out as they are.
    conv.register_unstructure_hook_func(_is_json_container, _as_is)
    return conv


converter = _make_converter()


def _describe(exc: BaseException, type_: Any) -> str:
    """One short phrase for a leaf error of cattrs."""
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unknown key {min(exc.extra_fields)!r}"
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, TypeError | ValueError) and str(exc).startswith("expected "):
        return str(exc)
    if get_origin(type_) is Literal:
        return "expected one of " + ", ".join(json.dumps(v) for v in get_args(type_))
    return f"expected {json_type_name(type_)}"


_JSON_NAMES = {int: "int", float: "number", str: "string", bool: "boolean",
               type(None): "null", dict: "an object", list: "a list", tuple: "a list"}


def json_type_name(tp: Any) -> str:
    """What a value of annotation `tp` is in JSON words (never a Python class name)."""
    if tp in _JSON_NAMES:
        return _JSON_NAMES[tp]
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(json.dumps(v) for v in get_args(tp))
    if origin in (Union, UnionType):
        return " or ".join(json_type_name(a) for a in get_args(tp))
    if origin is not None and origin in _JSON_NAMES:
        return _JSON_NAMES[origin]
    if _is_array(tp):
        return "a list"
    return "an object" if attrs.has(tp) or origin is dict else "a valid value"


def first_error(exc: BaseException, root: str) -> tuple[str, str]:
    """(path, phrase) of the first leaf error under a cattrs validation error."""
    messages = cattrs.transform_error(exc, path=root, format_exception=_describe)
    text = messages[0] if messages else f"invalid value @ {root}"
    phrase, _, path = text.rpartition(" @ ")
    if phrase.startswith("unknown key "):  # name the key itself, not the object holding it
        key = phrase.removeprefix("unknown key ").strip("'\"")
        path, phrase = f"{path}.{key}", "unknown key"
    return path, phrase


def structure(value: Any, cls: type[T], root: str = "args") -> T:
    """Build `cls` from the JSON value `value`, its bounds checked (protocol/bounds.py), or
    raise bad_request naming the bad path."""
    if not isinstance(value, dict):
        raise ProtocolError(ErrorCode.BAD_REQUEST, f"{root}: expected an object", {"path": root})
    try:
        out = converter.structure(value, cls)
        check(out, root)
        return out
    except OutOfBounds as exc:
        raise ProtocolError(exc.code, str(exc), {"path": exc.path}) from None
    except (ClassValidationError, IterableValidationError) as exc:
        path, phrase = first_error(exc, root)
        forget_frames(exc)
        raise ProtocolError(ErrorCode.BAD_REQUEST, f"{path}: {phrase}", {"path": path}) from None
    except (TypeError, ValueError) as exc:
        forget_frames(exc)
        raise ProtocolError(ErrorCode.BAD_REQUEST, f"{root}: {exc}", {"path": root}) from None


def unstructure(value: Any) -> Any:
    """The JSON value of an attrs instance (or of plain JSON-able data)."""
    return converter.unstructure(value)
