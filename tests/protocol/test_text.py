"""Text lengths in UTF-16 code units, and cuts that never split a pair."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.text import utf16_clip, utf16_len
from tests.utf16 import EMOJI


@pytest.mark.parametrize(("text", "units"), [
    ("", 0), ("a" * 80, 80), ("é中", 2), (EMOJI, 2), ("a" + EMOJI * 40, 81), ("\ud800", 1)])
def test_utf16_len_counts_as_javascript_does(text: str, units: int) -> None:
    assert utf16_len(text) == units


@given(st.text())
def test_utf16_len_is_the_utf16_encoding(text: str) -> None:
    assert utf16_len(text) == len(text.encode("utf-16-le", "surrogatepass")) // 2


@pytest.mark.parametrize(("text", "limit", "kept"), [
    ("abc", 3, "abc"), ("abcd", 3, "abc"), ("ab" + EMOJI, 4, "ab" + EMOJI),
    ("ab" + EMOJI + "c", 3, "ab"),  # the pair the cut would split is left out whole
    ("ab" + EMOJI + "c", 4, "ab" + EMOJI), (EMOJI * 41, 80, EMOJI * 40),
    ("a" + EMOJI * 40, 80, "a" + EMOJI * 39), ("ab\ud800c", 3, "ab\ud800")])
def test_utf16_clip_keeps_whole_characters(text: str, limit: int, kept: str) -> None:
    assert utf16_clip(text, limit) == kept


@given(st.text(), st.integers(0, 40))
def test_utf16_clip_is_the_longest_start_within_the_limit(text: str, limit: int) -> None:
    kept = utf16_clip(text, limit)
    assert text.startswith(kept) and utf16_len(kept) <= limit
    assert kept == text or utf16_len(text[:len(kept) + 1]) > limit

