"""The fast JSON helpers agree with the stdlib's full paths on every value and text."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.jsontext import compact_encoder, strict_decoder

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
