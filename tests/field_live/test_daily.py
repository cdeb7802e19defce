"""The daily field exists without a start; yesterday's board merges into the all-time board."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from pathlib import Path

import pytest

from actors.field.live import daily_id
from protocol.client import Client, RequestError
from tests.field_live._live import ready
from tests.server.ws_harness import running_server

DAY = date(2026, 11, 28)


async def test_daily_field_and_alltime_board(tmp_path: Path) -> None:
    today = [DAY]

    def clock() -> int:  # noon UTC of today[0], in ms
        return int(datetime.combine(today[0], time(12), UTC).timestamp() * 1000)

    # The owner: only the owner may name the leaderboard users an agent plays for.
    async with running_server(tmp_path, open_mode=True, clock=clock) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as c:
        first = daily_id(DAY)
        rules = await ready(c, first)  # nobody started it
        assert rules["fog"] is True and rules["grow"] is not None
        with pytest.raises(RequestError) as err:
            await c.request("field.start", f"field:{first}", {"size": 20})
        assert err.value.code == "already_exists"
        j = await c.request("field.join", f"field:{first}", {"name": "early", "user": "ann",
                                                              "model": "m1"})
        obs = await c.request("field.observe", f"field:{first}", {"agent": j["agent"]})
        await c.request("field.reveal", f"field:{first}", {
            "agent": j["agent"], "tile": j["seed_tile"], "expected_revision": obs["revision"]})
        board = await c.request("field.leaderboard", f"field:{first}", {})
        assert [r["key"] for r in board["users"]] == ["ann"] and board["days"] == ["2026-11-28"]

        today[0] = date(2026, 11, 29)
        second = daily_id(today[0])
        await ready(c, second)
        j2 = await c.request("field.join", f"field:{second}", {"name": "b", "user": "bob",
                                                               "model": "m1"})
        assert j2["agent"] == "a1"
        merged = await c.request("field.leaderboard", f"field:{second}", {"merged": True})
        assert merged["days"] == ["2026-11-28", "2026-11-29"]
        assert sorted(r["key"] for r in merged["users"]) == ["ann", "bob"]
        assert [r["agents"] for r in merged["models"]] == [2]
        # a daily of another day does not start itself
        with pytest.raises(RequestError) as err:
            await c.request("field.rules", "field:day-2020-01-01")
        assert err.value.code == "unknown_actor"


async def test_only_the_canonical_date_names_the_daily_field(tmp_path: Path) -> None:
    def clock() -> int:
        return int(datetime.combine(DAY, time(12), UTC).timestamp() * 1000)

    year, week, weekday = DAY.isocalendar()
    async with running_server(tmp_path, clock=clock) as srv, Client.connect(srv.ws_url) as c:
        # other ISO spellings of today name no daily field: asking starts nothing
        for game in (f"day-{DAY:%Y%m%d}", f"day-{year}-W{week}-{weekday}"):
            with pytest.raises(RequestError) as err:
                await c.request("field.rules", f"field:{game}")
            assert err.value.code == "unknown_actor", game
