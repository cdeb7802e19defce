"""server/metrics.py: the Prometheus text exposition format."""

from __future__ import annotations

import re

import pytest

from server.metrics import CallbackGauge, Counter, Gauge, Histogram, Metrics, Registry, format_value

# One sample line: name, optional {labels}, value.
SAMPLE_RE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? '
    r"(-?[0-9.e+-]+|\+Inf|-Inf|NaN)$")


def parse(text: str) -> dict[str, float]:
    """Check every line's shape and return {sample key: value}."""
    assert text.endswith("\n")
    samples: dict[str, float] = {}
    declared: list[str] = []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            declared.append(line.split()[2])
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert name == declared[-1]
            assert kind in {"counter", "gauge", "histogram"}
        else:
            assert SAMPLE_RE.match(line), line
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return samples


def test_counter_gauge_and_labels() -> None:
    reg = Registry()
    c = reg.register(Counter("app_requests_total", "Requests.", ("code",)))
    g = reg.register(Gauge("app_open", "Open things."))
    c.labels(code="ok").inc()
    c.labels("ok").inc(2)
    c.labels(code='we"ird\\\n').inc()
    g.inc(5)
    g.dec(2)
    text = reg.render()
    assert text.startswith("# HELP app_requests_total Requests.\n# TYPE app_requests_total counter\n")
    samples = parse(text)
    assert samples == {
        'app_requests_total{code="ok"}': 3,
        'app_requests_total{code="we\\"ird\\\\\\n"}': 1,
        "app_open": 3,
    }


def test_counter_refuses_to_decrease_and_unlabelled_use_of_labelled_family() -> None:
    c = Counter("x_total", "X.", ("kind",))
    with pytest.raises(ValueError, match=r"^x_total has labels \('kind',\); use \.labels\(\.\.\.\)$"):
        c.inc()
    with pytest.raises(ValueError, match=r"^a counter cannot decrease$"):
        c.labels(kind="a").inc(-1)
    with pytest.raises(ValueError, match=r"^x_total takes labels \('kind',\), got \['kin'\]$"):
        c.labels(kin="a")
    with pytest.raises(ValueError, match=r"^invalid metric name '1x'$"):
        Counter("1x", "bad")


def test_histogram_buckets_are_cumulative_with_sum_and_count() -> None:
    h = Histogram("lat_seconds", "Latency.", buckets=(0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 3.0):
        h.observe(v)
    samples = parse(Registry().register(h).render())
    assert samples == {
        'lat_seconds_bucket{le="0.1"}': 2,  # `le` is inclusive: 0.1 counts here
        'lat_seconds_bucket{le="1"}': 3,
        'lat_seconds_bucket{le="+Inf"}': 4,
        "lat_seconds_sum": pytest.approx(3.65),
        "lat_seconds_count": 4,
    }


def test_callback_gauge_reads_at_render_time() -> None:
    depths = {("lobby",): 2}
    g = CallbackGauge("depth", "Depth.", ("kind",))
    assert g.samples() == []
    g.set_function(lambda: depths)
    assert parse(g.render()) == {'depth{kind="lobby"}': 2}
    depths[("field",)] = 7
    assert parse(g.render()) == {'depth{kind="field"}': 7, 'depth{kind="lobby"}': 2}
    with pytest.raises(TypeError):
        g.labels(kind="x")


def test_server_metrics_render_every_instrument() -> None:
    m = Metrics()
    m.connections_open.inc()
    m.frames_in.inc(3)
    m.frames_out.inc(2)
    m.errors.labels(code="bad_request").inc()
    m.mailbox_depth.set_function(lambda: {("lobby",): 1})
    m.handler_seconds.labels(kind="lobby").observe(0.002)
    m.events_appended.labels(kind="lobby").inc()
    m.subscribers_dropped.labels(kind="lobby").inc()
    text = m.render()
    samples = parse(text)
    for name in ("connections_open", "frames_in_total", "frames_out_total", "mailbox_depth",
                 "handler_seconds", "events_appended_total", "subscribers_dropped_total"):
        assert f"# TYPE petridish_{name} " in text
    assert samples["petridish_frames_in_total"] == 3
    assert samples['petridish_handler_seconds_bucket{kind="lobby",le="0.0025"}'] == 1
    assert samples['petridish_handler_seconds_bucket{kind="lobby",le="0.001"}'] == 0
    assert samples['petridish_mailbox_depth{kind="lobby"}'] == 1


def test_format_value() -> None:
    assert [format_value(v) for v in (3.0, 0.25, float("inf"), float("nan"))] == \
        ["3", "0.25", "+Inf", "NaN"]
