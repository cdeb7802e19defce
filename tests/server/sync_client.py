"""Requests from a test that runs no event loop of its own (a sync browser test): a fresh
client on a loop of its own for the calls (tests/server/test_lobby_page.py,
tests/ecosystem/test_page.py)."""

from __future__ import annotations

import trio

from protocol.client import Client


def ask_all(url: str, token: str, *calls: tuple[str, str | None, dict]) -> list:
    """Make requests with a fresh client (the sync browser test runs no event loop of ours)."""

    async def run() -> list:
        async with Client.connect(url, token=token, client="lobby-test/1.0") as c:
            return [await c.request(op, to=to, args=args) for op, to, args in calls]

    return trio.run(run)
