"""The persistent chunked store: copy-on-write updates that share untouched chunks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.field.cellstore import CHUNK, CellStore


def test_new_store_reads_fill_everywhere() -> None:
    s = CellStore.new(3 * CHUNK + 5, np.int8, fill=-1)
    assert len(s) == 3 * CHUNK + 5
    assert s[0] == -1 and s[len(s) - 1] == -1
    assert (s.to_array() == -1).all() and len(s.to_array()) == len(s)


def test_update_copies_only_touched_chunks_and_keeps_the_old_store() -> None:
    s0 = CellStore.new(1_000_000, np.int8, fill=-1)
    s1 = s0.set([5, 7, CHUNK + 1], [1, 0, 1])
    assert [s0[5], s0[7], s0[CHUNK + 1]] == [-1, -1, -1]
    assert [s1[5], s1[7], s1[CHUNK + 1]] == [1, 0, 1]
    assert s1.shared_chunks(s0) == len(s0.chunks) - 2
    s2 = s1.set([CHUNK + 1], [0])
    assert s1[CHUNK + 1] == 1 and s2[CHUNK + 1] == 0
    assert s2.chunks[0] is s1.chunks[0]


def test_chunks_are_read_only() -> None:
    s = CellStore.new(10, np.int8).set([3], [1])
    with pytest.raises(ValueError):
        s.chunks[0][3] = 0


def test_out_of_range_ids_raise_and_change_nothing() -> None:
    s = CellStore.new(100, np.int32, fill=0)
    with pytest.raises(IndexError, match=r"^ids outside 0\.\.99$"):
        s.set([100], [1])
    with pytest.raises(IndexError):
        s.take([-1])
    with pytest.raises(IndexError):
        _ = s[100]
    assert (s.to_array() == 0).all()


def test_extend_keeps_values_and_fills_the_rest() -> None:
    s = CellStore.new(CHUNK + 3, np.int32, fill=-1).set([0, CHUNK + 2], [7, 9])
    g = s.extend(3 * CHUNK)
    assert g[0] == 7 and g[CHUNK + 2] == 9 and g[CHUNK + 3] == -1 and g[3 * CHUNK - 1] == -1
    assert g.chunks[0] is s.chunks[0]
    with pytest.raises(ValueError):
        s.extend(1)


def test_a_store_made_of_its_values_equals_it_and_shares_its_untouched_chunks() -> None:
    s = CellStore.new(3 * CHUNK + 5, np.int32, fill=-1).set([1, 3 * CHUNK + 4],
                                                            [-7, 2**31 - 1])
    made = CellStore.of(s.to_array(), -1)
    assert made == s and made.to_array().tolist() == s.to_array().tolist()
    assert made.chunks[1] is made.chunks[2] is not made.chunks[0]  # one block of fill
    assert not any(c.flags.writeable for c in made.chunks)
    assert made.set([1], [6])[1] == 6 and made[1] == -7


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.one_of(st.integers(0, 3 * CHUNK - 1),
                                               st.integers(0, 12 * CHUNK - 1)),
                                     st.integers(-1, 1)), max_size=30), max_size=8))
def test_matches_a_plain_array_at_every_step(batches: list[list[tuple[int, int]]]) -> None:
    size = 12 * CHUNK  # batches within one chunk, a few chunks, and more than eight
    store = CellStore.new(size, np.int8, fill=-1)
    plain = np.full(size, -1, dtype=np.int8)
    history = [(store, plain.copy())]
    for batch in batches:
        ids = [i for i, _ in batch]
        vals = [v for _, v in batch]
        store = store.set(ids, vals)
        for i, v in batch:  # last write wins, as the store promises
            plain[i] = v
        history.append((store, plain.copy()))
        if ids:
            assert store.take(ids).tolist() == plain[ids].tolist()
    for old, expect in history:  # earlier states keep their values
        assert np.array_equal(old.to_array(), expect)
    assert history[-1][0] == CellStore.new(size, np.int8, fill=-1).set(
        np.arange(size), history[-1][1])
