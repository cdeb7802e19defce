"""Every HTML page the server serves loads in headless Chromium under its own
Content-Security-Policy (server/headers.py) without a single violation: the policies
forbid what no page needs. (Tests that poll pages with Playwright's wait_for_function
bypass the policy, because it evaluates strings; this one keeps it.)"""

from __future__ import annotations

import pytest

from server.config import WEB_DIR
from tests.lab.live import wait_js
from tests.server.server_process import ServerProcess

pytestmark = pytest.mark.browser

# Each page at a world that does not exist, so nothing is generated: what a page loads
# on its own (scripts, styles, the socket) is what is checked.
QUERY = {"field/index.html": "?id=field:nowhere", "lobby/world.html": "?id=counter:nowhere",
         "ecosystem/index.html": "?id=ecosystem:nowhere"}
RECORD = """window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));"""


def test_every_page_loads_without_violating_its_policy(browser, tmp_path) -> None:
    pages = sorted(str(p.relative_to(WEB_DIR)) for p in WEB_DIR.rglob("*.html"))
    assert "lab/arena.html" in pages and "lobby/index.html" in pages
    with ServerProcess(tmp_path / "data") as server:
        page = browser.new_page()
        page.add_init_script(RECORD)
        for path in pages:
            response = page.goto(f"{server.http_url}/{path}{QUERY.get(path, '')}")
            assert "content-security-policy" in response.headers, path
            page.wait_for_load_state("load")
            wait_js(page, "document.querySelector('script[type=module]') !== null")
            page.wait_for_timeout(300)  # module scripts run, the socket opens
            assert page.evaluate("window.__violations") == [], path
        page.close()
