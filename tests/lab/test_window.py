"""`Window`, the lab's immutable map of recent deals: an entry lives at least one window and
at most two, a full generation rotates early, and old versions stay as they were."""

from __future__ import annotations

from actors.lab.events import PairDealt
from actors.lab.state import MAX_DEALS, evolve, initial
from actors.lab.window import Window


def test_entries_live_one_to_two_windows() -> None:
    w = Window(span=100, limit=1000).put("a", 1, 0).put("b", 2, 50)
    assert (w.get("a"), w["b"], len(w)) == (1, 2, 2)
    w = w.put("c", 3, 120)  # `young` began a window ago: it becomes `old`
    assert "a" in w and "c" in w
    w = w.put("d", 4, 230)  # and the generation before is dropped whole
    assert "a" not in w and "b" not in w and (w.get("c"), w.get("d")) == (3, 4)
    assert w.get("a", "gone") == "gone"


def test_a_full_generation_rotates_early_and_versions_do_not_change() -> None:
    w = Window(span=10**9, limit=2)
    first = w.put(1, "one", 0)
    w = first.put(2, "two", 0).put(3, "three", 0)
    assert len(w) == 3 and 1 in w
    w = w.put(4, "four", 0).put(5, "five", 0)
    assert 1 not in w and {3, 4, 5} <= {k for k in (1, 2, 3, 4, 5) if k in w}
    assert len(first) == 1 and first[1] == "one"  # an older version is untouched
    moved = w.put(3, "again", 1)  # a key put again moves to the young generation
    assert moved[3] == "again" and len(moved) == len(w)
    assert 4 not in w.remove(4) and 4 in w


def test_a_lab_holds_at_most_100_000_deals_however_fast_they_come() -> None:
    """A public deal is ~400 B of the lab's memory (the pair and its two dealt ids) for up
    to twenty minutes: however many come within one window, a lab holds at most
    2 x MAX_DEALS of them (~40 MiB), and the newest MAX_DEALS are all held."""
    state = initial("deals")
    n = 120_000  # within two minutes (one a millisecond)
    for i in range(n):
        state = evolve(state, PairDealt(f"p{i}", "public", f"k{i}", "s-a", "s-b", None, i))
    assert len(state.deals) <= 100_000 and len(state.dealt) <= 200_000
    newest = range(n - MAX_DEALS, n)
    assert all(f"p{i}" in state.deals and (f"k{i}", "s-a") in state.dealt for i in newest)
