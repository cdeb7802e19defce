"""The lab's browser tests share one headless Chromium per module (a launch costs seconds
on this machine); each test opens its own pages."""

from __future__ import annotations

import pytest

from tests.conftest import BROWSER_ARGS


@pytest.fixture(scope="module")
def browser(chromium_path: str):
    """A headless Chromium with software WebGL2 for the module's tests."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path, headless=True, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()
