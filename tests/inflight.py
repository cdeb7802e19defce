"""What a browser page asks of the server while it runs: its web/js/client.js requests in
flight (the most at once, by op), its unhandled promise rejections and every text its
status line shows.

`errors(page)` before the page loads lists what goes wrong in it (uncaught errors, the
console's errors); `watch(page)` before the page loads (or `page, errors =
watched(browser)`), `count(page)` once it has; `seen(page)` reads what they recorded,
`calm(page, errors)` checks it;
`through_an_outage` restarts the server under a page and checks what its status line says.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

# Before the page's scripts: every unhandled rejection, by its reason's text.
_REJECTIONS = """window.__rejections = [];
window.addEventListener("unhandledrejection", (e) => window.__rejections.push(String(e.reason)));"""

# Every text #status shows once the page's scripts ran (reconnect attempts and failed
# readings take turns at it while the server is away).
_STATUSES = """window.__statuses = [];
addEventListener("DOMContentLoaded", () => {
  const status = document.getElementById("status");
  if (!status) return;
  new MutationObserver(() => window.__statuses.push(status.textContent))
    .observe(status, { childList: true, characterData: true, subtree: true });
});"""

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


def errors(page: Any, console: bool = True) -> list[str]:
    """The list that `page`'s uncaught errors go into from now on and, with `console`, its
    console's errors: a resource that failed to load or that the page's policy refused (an
    icon, say), a `console.error`. (Not its warnings: a test's own pixel readbacks draw one.
    Through an outage the console reports every reconnect that failed: `console=False`.)"""
    found: list[str] = []
    page.on("pageerror", lambda exc: found.append(str(exc)))
    if console:
        page.on("console", lambda m: found.append(f"{m.type}: {m.text} ({m.location['url']})")
                if m.type == "error" else None)
    return found


def watch(page: Any) -> None:
    """Record `page`'s unhandled rejections and statuses from its next load on."""
    page.add_init_script(_REJECTIONS)
    page.add_init_script(_STATUSES)


def watched(browser: Any, **options: Any) -> tuple[Any, list[str]]:
    """A new page of `browser` (`options` as for `new_page`) watched from its first load, its
    uncaught errors in the list, on a fake clock that runs until the test moves it on."""
    page = browser.new_page(**options)
    found = errors(page, console=False)
    watch(page)
    page.clock.install()
    return page, found


def count(page: Any) -> None:
    """Count `page`'s requests from now on (the page loaded)."""
    page.evaluate(_COUNT)


def seen(page: Any) -> dict[str, Any]:
    """`{"most": {op: the most in flight at once}, "done": {op: how many ended},
    "rejections": [reason, ...], "statuses": [text, ...]}` so far."""
    return page.evaluate("""() => ({ most: window.__requests.most, done: window.__requests.done,
                                    rejections: window.__rejections,
                                    statuses: window.__statuses })""")


def calm(page: Any, errors: list[str]) -> dict[str, Any]:
    """Check that `page` (from `watched`) had at most one request of any op in flight at once,
    no unhandled rejection and no uncaught error (`errors`); what it `seen`."""
    seen_now = seen(page)
    assert max(seen_now["most"].values()) == 1, seen_now
    assert seen_now["rejections"] == [] and errors == [], (seen_now["rejections"], errors)
    return seen_now


def through_an_outage(page: Any, errors: list[str], server: Any, state: str, text: str,
                      timeout: int = 30_000) -> None:
    """Kill `server` (a ServerProcess `page`, from `watched`, is on) and start it again on its
    port: while it is away `page`'s #status follows the connection (`reconnecting`), not what
    the page last said; once it is back it says the page's own word again (`state`, `text`);
    and the page had no unhandled rejection and no uncaught error (`errors`)."""
    status = page.locator("#status")
    port = server.port
    server.kill()
    expect(status).to_have_attribute("data-state", "reconnecting", timeout=timeout)
    expect(status).to_have_text("reconnecting")
    server.start(port=port)
    expect(status).to_have_text(text, timeout=timeout)
    expect(status).to_have_attribute("data-state", state)
    rejections = page.evaluate("window.__rejections")
    assert rejections == [] and errors == [], (rejections, errors)
