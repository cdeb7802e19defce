"""SIGKILL the server while judges vote: after the restart the pool, the ratings, the votes
and the lineage are what the stored stream says (every acknowledged vote among them),
and the strikes and deals are gone (in memory, as the seed says)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import trio

from actors.lab.events import decode
from actors.lab.rules import WORLD
from protocol.client import Client, ClientError, RequestError
from server.storage import SqliteEventStore
from tests.lab.live import born, new_lab, with_owner
from tests.server.server_process import ServerProcess

JUDGES = 8


def read_stream(data: Path, actor_id: str) -> list[dict]:
    async def read() -> list[dict]:
        async with SqliteEventStore.in_directory(data) as store:
            return [e.data for e in await store.read(actor_id)]

    return trio.run(read)


def test_sigkill_mid_judging_keeps_pool_ratings_votes_lineage_and_forgets_strikes(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(data).start()
    try:
        async def setup(c):
            lab = await new_lab(c, "k")
            parents = await born(c, lab, 4)
            for oid in parents:
                await c.request("lab.ok", lab, {"id": oid})
            child = (await born(c, lab, 1))[0]  # a child of proven parents: lineage
            await c.request("lab.ok", lab, {"id": child})
            canaries = await born(c, lab, 2)
            # an in-memory strike on a canary, from judge "k1"
            for _ in range(80):
                pair = await c.request("lab.public_pair", lab, {"client_key": "k1"})
                if pair["canary"]:
                    break
            struck = await c.request("lab.seen", lab, {"id": pair["canary"],
                                                       "client_key": "k1", "ok": False})
            assert struck["verdict"] == "struck"
            return lab, child, canaries, pair

        lab, child, canaries, old_pair = with_owner(server, setup)
        acked: list[str] = []  # pairs whose vote the server acknowledged
        stop = threading.Event()

        async def judges() -> None:
            async def judge(k: int) -> None:
                key = f"judge{k}"
                try:
                    async with Client.connect(server.ws_url, reconnect=False) as c:
                        while not stop.is_set():
                            pair = await c.request("lab.public_pair", lab, {"client_key": key})
                            await c.request("lab.vote", lab, {"pair": pair["pair"],
                                                              "winner": pair["right"]["id"],
                                                              "client_key": key})
                            acked.append(pair["pair"])
                except (ClientError, OSError):
                    return  # the server died under us

            async with trio.open_nursery() as nursery:
                for k in range(JUDGES):
                    nursery.start_soon(judge, k)

        voting = threading.Thread(target=trio.run, args=(judges,))
        voting.start()
        deadline = time.monotonic() + 60
        while len(acked) < 40 and time.monotonic() < deadline:
            time.sleep(0.02)
        server.kill()  # mid-judging: votes in flight
        stop.set()
        voting.join(30)
        assert len(acked) >= 40

        records = read_stream(data, lab)
        stored_votes = {e["pair"] for e in records if e["type"] == "vote_cast"}
        assert set(acked) <= stored_votes  # every acknowledged vote is durable
        folded = WORLD.initial("k")
        for record in records:
            folded = WORLD.evolve(folded, decode(record))

        token = server.owner_token
        server.start()
        server.owner_token = token  # printed on the first start only

        async def after(c):
            info = await c.request("lab.info", lab, {})
            views = (await c.request("lab.gallery", lab, {"limit": 200}))["organisms"] + \
                (await c.request("lab.backlog", lab, {}))["organisms"]
            lineage = await c.request("lab.lineage", lab, {"id": child, "depth": 1})
            # the strike is gone: one strike from another key does not bench
            for _ in range(80):
                pair = await c.request("lab.public_pair", lab, {"client_key": "k2"})
                if pair["canary"] == old_pair["canary"]:
                    break
            verdict = (await c.request("lab.seen", lab, {"id": old_pair["canary"],
                                                         "client_key": "k2", "ok": False}))
            try:  # and a pair dealt before the crash is not votable
                await c.request("lab.vote", lab, {"pair": old_pair["pair"], "client_key": "k1",
                                                  "winner": old_pair["left"]["id"]})
                old_vote = "accepted"
            except RequestError as e:
                old_vote = e.code
            return info, views, lineage, verdict, old_vote

        info, views, lineage, verdict, old_vote = with_owner(server, after)
        assert info["votes"] == len(stored_votes) == folded.votes
        assert info["organisms"] == len(folded.organisms) == 7
        assert (info["proven"], info["dead"]) == (5, 0)
        for view in views:  # every rating is the stream's
            o = folded.organisms[view["id"]]
            assert (view["mu"], view["sigma"], view["judged"]) == (o.rating.mu, o.rating.sigma,
                                                                   o.judged)
        judged = {oid for oid, o in folded.organisms.items() if o.judged}
        assert judged and judged <= {v["id"] for v in views}
        root = lineage["ancestors"][0]
        assert root["parents"] == list(folded.organisms[child].parents) and root["parents"]
        assert {a["id"] for a in lineage["ancestors"][1:]} == set(root["parents"])
        assert verdict["verdict"] == "struck"  # not benched: k1's strike did not survive
        assert old_vote == "not_dealt"
        assert set(canaries) <= set(folded.organisms)
    finally:
        server.kill()
