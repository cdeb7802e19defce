"""Property: whatever interleaving of commits, pushes and (re)subscriptions, each subscriber
sees every revision after its starting point exactly once and in order, until a resync."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.runtime.subscriber import SubscriberQueue
from actors.runtime.topic import Topic

ops = st.lists(st.one_of(
    st.tuples(st.just("commit"), st.integers(1, 4)),
    st.tuples(st.just("flush"), st.just(0)),
    st.tuples(st.just("subscribe"), st.integers(0, 30)),  # since = rev - n (None when n > rev)
), max_size=60)


@settings(max_examples=200, deadline=None)
@given(ops, st.integers(2, 12), st.integers(3, 40))
def test_each_subscriber_sees_each_revision_once_in_order(plan, history, capacity) -> None:
    topic = Topic("t:x", history, on_drop=lambda: None)
    rev = 0
    starts: list[tuple[SubscriberQueue, int | None, int]] = []
    for op, n in plan:
        if op == "commit":
            topic.publish(rev + n, [{"r": r} for r in range(rev + 1, rev + n + 1)])
            rev += n
        elif op == "flush":
            topic.flush()
        else:
            queue = SubscriberQueue(capacity)
            since = rev - n if n <= rev else None
            topic.subscribe(queue, since, len(starts), rev, lambda rev=rev: {"rev": rev})
            starts.append((queue, since, rev))
    topic.flush()
    for queue, since, rev_at in starts:
        frames = [json.loads(f) for f in iter(queue.get_nowait, None)]
        assert frames[0]["ok"] is True
        too_old = since is None or since < rev_at - history
        assert (len(frames) > 1 and frames[1]["kind"] == "snapshot") == too_old
        seen = since
        for push in frames[1:]:
            if push["kind"] == "snapshot":
                assert push is frames[1] and push["rev"] == rev_at
                seen = push["rev"]
            elif push["kind"] == "events":
                revs = [e["r"] for e in push["data"]]
                assert revs == list(range(seen + 1, seen + 1 + len(revs)))
                assert push["rev"] == revs[-1]
                seen = revs[-1]
            else:
                assert push["kind"] == "resync" and push is frames[-1]
                break
        else:
            assert seen == rev  # not dropped: it is up to date
