"""What a browser page asks of the server while it runs: its web/js/client.js requests in
flight (the most at once, by op) and its unhandled promise rejections.

`watch(page)` before the page loads, `count(page)` once it has; `seen(page)` reads both.
"""

from __future__ import annotations

from typing import Any

# Before the page's scripts: every unhandled rejection, by its reason's text.
_REJECTIONS = """window.__rejections = [];
window.addEventListener("unhandledrejection", (e) => window.__rejections.push(String(e.reason)));"""

# The page's modules import /js/client.js once: its Client's requests from now on, counted.
_COUNT = """async () => {
  const { Client } = await import("/js/client.js");
  const request = Client.prototype.request;
  const probe = window.__requests = { now: {}, most: {}, done: {} };
  Client.prototype.request = async function (op, ...rest) {
    probe.now[op] = (probe.now[op] ?? 0) + 1;
    probe.most[op] = Math.max(probe.most[op] ?? 0, probe.now[op]);
    try {
      return await request.call(this, op, ...rest);
    } finally {
      probe.now[op] -= 1;
      probe.done[op] = (probe.done[op] ?? 0) + 1;
    }
  };
}"""


def watch(page: Any) -> None:
    """Record `page`'s unhandled rejections from its next load on."""
    page.add_init_script(_REJECTIONS)


def count(page: Any) -> None:
    """Count `page`'s requests from now on (the page loaded)."""
    page.evaluate(_COUNT)


def seen(page: Any) -> dict[str, Any]:
    """`{"most": {op: the most in flight at once}, "done": {op: how many ended},
    "rejections": [reason, ...]}` so far."""
    return page.evaluate("""() => ({ most: window.__requests.most, done: window.__requests.done,
                                    rejections: window.__rejections })""")
