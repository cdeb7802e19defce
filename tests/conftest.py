"""Fixtures every test package shares: the `shared/` corpora and headless Chromium."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# CI lays `shared/` beside the clone; PETRIDISH_SHARED overrides.
SHARED = Path(os.environ.get("PETRIDISH_SHARED", REPO.parent / "shared"))

BROWSER_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync"]


def shared_path(*parts: str) -> Path:
    """Path inside `shared/`; skips the calling test with a reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the corpora in ../shared are laid beside the clone in CI")
    return path


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian chromium's executable; `make test` installs it when run as root."""
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("Debian chromium is not installed (make test installs it as root)")
    return path


@pytest.fixture
def browser(chromium_path: str):
    """A headless Chromium with software WebGL2, driven by Playwright's sync API.

    Sync Playwright runs its own event loop, so browser tests are plain (non-trio)
    functions that start the server in a thread or subprocess.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path, headless=True, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()
