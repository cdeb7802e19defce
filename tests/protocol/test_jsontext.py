"""The fast JSON helpers agree with the stdlib's full paths on every value and text."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.jsontext import (
    RefusedNumber,
    bad_text_path,
    compact_encoder,
    escape_lone_surrogates,
    escape_lone_surrogates_in,
    exact_int,
    finite_float,
    first_refused_number,
    keeping_refused,
    plain_text,
    strict_decoder,
)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} refused")


@settings(max_examples=300)
@given(JSON_VALUES)
def test_encoders_render_what_json_dumps_renders(value: Any) -> None:
    for ascii_only in (True, False):
        expected = json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only,
                              allow_nan=False)
        assert compact_encoder(ensure_ascii=ascii_only)(value) == expected


@settings(max_examples=300)
@given(JSON_VALUES, st.sampled_from(["", " ", "\n\t "]))
def test_decoder_reads_what_json_loads_reads(value: Any, pad: str) -> None:
    text = pad + json.dumps(value) + pad
    assert strict_decoder(_refuse)(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", "[1", '{"a":1} x', '{"a":1}{}', "NaN", '{"a":-Infinity}',
                                  '{"a":tru}', "\u00a0{}"])
def test_decoder_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        strict_decoder(_refuse)(text)


def test_encoder_refuses_non_finite_numbers_and_keeps_working() -> None:
    encode = compact_encoder(ensure_ascii=False)
    for bad in (math.nan, [1, {"x": math.inf}], -math.inf):
        with pytest.raises(ValueError):
            encode(bad)
    shared = [1]
    assert encode({"a": shared, "b": shared}) == '{"a":[1],"b":[1]}'  # no stale markers


@settings(max_examples=300)
@given(JSON_VALUES)
def test_escaped_surrogates_make_text_any_writer_takes(value: Any) -> None:
    """Every string and key with a lone surrogate shows it as its escape text; any other
    value is the same value (the same object when it holds none)."""
    out = escape_lone_surrogates_in(value)
    text = json.dumps(out, ensure_ascii=False)
    text.encode("utf-8")  # (would raise on a lone surrogate)
    if "\\ud" not in json.dumps(value).lower():
        assert out is value

    def strings(v: Any) -> list[str]:
        if isinstance(v, str):
            return [v]
        if isinstance(v, dict):
            return [s for k, item in v.items() for s in [k, *strings(item)]]
        return [s for item in v for s in strings(item)] if isinstance(v, list) else []

    assert strings(out) == [escape_lone_surrogates(s) for s in strings(value)]


def test_escaped_surrogates_in_what_json_does_not_encode() -> None:
    value = {"a": ("x\ud800", 1), "b\udc00": [math.nan, {"c": "plain"}]}
    assert escape_lone_surrogates_in(value) == {
        "a": ["x\\ud800", 1], "b\\udc00": [pytest.approx(math.nan, nan_ok=True),
                                          {"c": "plain"}]}


@pytest.mark.parametrize("text", ["steady", "st\u00e9ady \U0001f41f", "\u062b\u0627\u0628\u062a",
                                  "a\u200db \u200f", "\u00a0\u3000"])
def test_plain_text(text: str) -> None:
    assert plain_text(text) and plain_text(text, lines=True)


@pytest.mark.parametrize("char", ["\x00", chr(0xD800), chr(0xDFFF), "\x01", "\x1b", "\x1f",
                                  "\x7f", "\x80", "\x85", "\x9f", "\u202a", "\u202e",
                                  "\u2066", "\u2069"])
def test_not_plain_text(char: str) -> None:
    assert not plain_text(f"a{char}b") and not plain_text(f"a{char}b", lines=True)


def test_lines_of_plain_text() -> None:
    for char in "\t\n\r":
        assert plain_text(f"a{char}b", lines=True) and not plain_text(f"a{char}b")


def test_bad_text_path_names_the_first_bad_string_or_the_object_of_a_bad_key() -> None:
    assert bad_text_path({"a": ["ok", {"b\x00": "\x00"}], "c": "\x00"}) == "a[1]"
    assert bad_text_path({"a": 1, "b": ["x", "\ud800"]}, "arguments") == "arguments.b[1]"
    assert bad_text_path("\x00") == "$" and bad_text_path({"\udfff": 1}) == "$"
    assert bad_text_path(["ok", {"k": [1, None]}]) is None


def test_paths_are_found_deeper_than_python_recurses() -> None:
    deep: Any = "\x00"
    for _ in range(5000):
        deep = {"k": [deep]}
    assert bad_text_path(deep) == "k[0]" + ".k[0]" * 4999


def test_refused_numbers_are_kept_in_their_place() -> None:
    decode = strict_decoder(_refuse, keeping_refused(exact_int), keeping_refused(finite_float))
    value = decode('{"a": [1, 2.5, -9007199254740991, 9007199254740992], "b": 1e400}')
    assert value["a"][:3] == [1, 2.5, -(2**53 - 1)]
    assert value["b"] == RefusedNumber("the number 1e400 is out of range")
    assert first_refused_number(value) == ("a[3]", RefusedNumber(
        "the integer 9007199254740992 is beyond +-(2^53 - 1), the range every JSON reader "
        "holds exactly"))
    assert first_refused_number(decode('{"a": [1, {"b": 2.5}]}')) is None
    # A key given twice: at the first one's place, with the last one's value.
    assert first_refused_number(decode('{"a": 1e400, "b": 1, "a": 2}')) is None
    assert first_refused_number(decode('{"a": 1, "b": 1e400, "a": -1e400}')) == (
        "a", RefusedNumber("the number -1e400 is out of range"))
    assert first_refused_number(decode('{"b": [1e400]}'), "args") == ("args.b[0]", RefusedNumber(
        "the number 1e400 is out of range"))
