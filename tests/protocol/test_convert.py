"""The strict converter: no coercion, no unknown keys, the path of the first bad field."""

from __future__ import annotations

from typing import Any, Literal

import attrs
import pytest

from protocol.convert import absent_not_null, structure, unstructure
from protocol.errors import ErrorCode, ProtocolError


@attrs.frozen
class Point:
    x: int
    y: float = 0.0


@attrs.frozen
class Shape:
    size: int
    name: str = ""
    points: list[Point] = attrs.field(factory=list)
    mode: Literal["fill", "line"] = "fill"
    tag: int | None = None
    weights: dict[str, int] = attrs.field(factory=dict)
    on: bool = False


def test_structures_valid_values_and_back() -> None:
    value = {"size": 3, "name": "s", "points": [{"x": 1, "y": 2}], "mode": "line", "tag": None,
             "weights": {"a": 1}, "on": True}
    shape = structure(value, Shape)
    assert shape == Shape(3, "s", [Point(1, 2.0)], "line", None, {"a": 1}, True)
    assert isinstance(shape.points[0].y, float)
    assert unstructure(shape) == {**value, "points": [{"x": 1, "y": 2.0}]}


@pytest.mark.parametrize(("value", "message"), [
    ({"size": "3"}, "args.size: expected int"),
    ({"size": True}, "args.size: expected int"),
    ({"size": 1.5}, "args.size: expected int"),
    ({}, "args.size: required field missing"),
    ({"size": 1, "zz": 0}, "args.zz: unknown key"),
    ({"size": 1, "name": 5}, "args.name: expected string"),
    ({"size": 1, "on": 1}, "args.on: expected boolean"),
    ({"size": 1, "points": [{"x": 1}, {"x": "a"}]}, "args.points[1].x: expected int"),
    ({"size": 1, "points": [{"x": 1, "q": 1}]}, "args.points[0].q: unknown key"),
    ({"size": 1, "points": [{}]}, "args.points[0].x: required field missing"),
    ({"size": 1, "points": [{"x": 1, "y": "2"}]}, "args.points[0].y: expected number"),
    ({"size": 1, "points": 5}, "args.points: expected list"),
    ({"size": 1, "mode": "dots"}, 'args.mode: expected one of "fill", "line"'),
    ({"size": 1, "tag": "7"}, "args.tag: expected int"),
    ({"size": "x", "name": 5}, "args.size: expected int"),  # the first bad field
])
def test_refusals_name_the_path(value: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError) as err:
        structure(value, Shape)
    assert (err.value.code, err.value.message) == (ErrorCode.BAD_REQUEST, message)
    assert err.value.detail == {"path": message.split(":")[0]}


def test_args_must_be_an_object() -> None:
    with pytest.raises(ProtocolError, match=r"^args: expected an object$"):
        structure([1], Shape)


@attrs.frozen
class Arrays:
    names: list[str] = attrs.field(factory=list)
    pair: tuple[int, int] = (0, 0)
    tags: frozenset[str] = frozenset()
    rows: list[list[int]] = attrs.field(factory=list)


@pytest.mark.parametrize(("value", "message"), [
    ({"names": "ab"}, "args.names: expected list"),  # not ["a", "b"]
    ({"names": {"a": 1}}, "args.names: expected list"),  # not its keys
    ({"tags": "xy"}, "args.tags: expected list"),
    ({"pair": [1, 2, 3]}, "args.pair: expected a list of 2 items"),
    ({"pair": {"0": 1, "1": 2}}, "args.pair: expected a list of 2 items"),
    ({"pair": [1, "2"]}, "args.pair[1]: expected int"),
    ({"rows": [[1], "ab"]}, "args.rows[1]: expected list"),
    ({"rows": [[1], [2, None]]}, "args.rows[1][1]: expected int"),
])
def test_only_a_json_array_is_a_list(value: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError) as err:
        structure(value, Arrays)
    assert err.value.message == message


def test_arrays_structure_to_their_python_types() -> None:
    value = {"names": ["a"], "pair": [1, 2], "tags": ["x", "x"], "rows": [[1, 2], []]}
    assert structure(value, Arrays) == Arrays(["a"], (1, 2), frozenset({"x"}), [[1, 2], []])


@absent_not_null
@attrs.frozen
class Either:
    kind: str
    left: str | None = None
    right: int | None = None


def test_a_class_absent_not_null_refuses_null_and_leaves_unset_fields_out() -> None:
    """What one server unstructures another structures back (a cluster forwards a call's
    args so): an unset field is left out, as a client must leave it."""
    either = structure({"kind": "r", "right": 2}, Either)
    assert unstructure(either) == {"kind": "r", "right": 2}
    assert structure(unstructure(either), Either) == either
    with pytest.raises(ProtocolError, match=r"^args\.left: expected string$"):
        structure({"kind": "r", "left": None, "right": 2}, Either)
    with pytest.raises(ProtocolError, match=r"^args\.right: expected int$"):
        structure({"kind": "r", "right": None}, Either)
