"""The daily field exists without a start; yesterday's board merges into the all-time board."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from pathlib import Path

import pytest

from actors.field.actor import ALLTIME
from actors.field.leaderboard import Boards, Row
from actors.field.live import AllTime, daily_id
from protocol.client import Client, RequestError
from server.storage import SqliteEventStore
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


async def test_the_alltime_board_is_answered_a_page_at_a_time(tmp_path: Path) -> None:
    # 1,000 users of an earlier day, each with 30 models; one model run by all of them
    users = tuple(Row(key=f"u{i:04d}", reward=1000 - i, agents=1, days=1,
                      models=tuple(f"m{j}" for j in range(30))) for i in range(1000))
    model = Row(key="m0", reward=1, agents=1000, days=1, users=tuple(r.key for r in users))
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.save_snapshot(ALLTIME, 1, AllTime(Boards(users, (model,)),
                                                      ("2026-11-01",)).to_json())

    def clock() -> int:
        return int(datetime.combine(DAY, time(12), UTC).timestamp() * 1000)

    async with running_server(tmp_path, open_mode=True, clock=clock) as srv, \
            Client.connect(srv.ws_url) as c:  # an anonymous spectator
        to = f"field:{daily_id(DAY)}"
        await ready(c, daily_id(DAY))
        store, loads = srv.state.directory.store, []
        load = store.load_snapshot

        async def counted(stream: str) -> object:
            loads.append(stream)
            return await load(stream)

        store.load_snapshot = counted  # type: ignore[method-assign]
        first = await c.request("field.leaderboard", to, {"merged": True})
        assert [r["key"] for r in first["users"]] == [f"u{i:04d}" for i in range(100)]
        assert (first["users_total"], first["models_total"]) == (1000, 1)
        assert first["days"] == ["2026-11-01", "2026-11-28"]
        assert len(first["users"][0]["models"]) == len(first["models"][0]["users"]) == 20
        last = await c.request("field.leaderboard", to, {"merged": True, "offset": 990,
                                                        "limit": 200})
        assert [r["key"] for r in last["users"]] == [f"u{i:04d}" for i in range(990, 1000)]
        assert last["models"] == []
        assert loads.count(ALLTIME) == 1  # read once, then kept
        with pytest.raises(RequestError) as err:
            await c.request("field.leaderboard", to, {"merged": True, "limit": 201})
        assert err.value.code == "bad_request"


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
