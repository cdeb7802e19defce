"""`petridish serve` as a node of a cluster: one process per node name (a second start
under a live one's name is refused and takes nothing from it), the cluster options
checked before anything starts, and each node's own error log in a shared --data."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
import trio

from protocol.client import Client
from protocol.errors import ProtocolError
from server.cli import main
from tests.cluster.conftest import Nodes
from tests.pgsql import sql
from tests.server.server_process import REPO, ServerProcess

pytestmark = pytest.mark.postgres


def nodes_rows(dsn: str) -> list[tuple[str, str]]:
    """The registry: (node, addr) of every row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT node, addr FROM nodes ORDER BY node").fetchall()


@contextmanager
def beating(dsn: str, node: str) -> Iterator[None]:
    """Heartbeats for `node`'s process from this one too, every 0.1 s, while the block
    runs: the second start sees it alive even should the first be starved on a loaded
    machine (it beats every second; a start watches for 2.5 s)."""
    done = threading.Event()

    def beat() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not done.wait(0.1):
                conn.execute("UPDATE nodes SET seen_at = now() WHERE node = %s", (node,))

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def test_a_second_process_under_a_live_node_s_name_exits_and_leaves_the_first_reachable(
        postgres_dsn: str, tmp_path: Path) -> None:
    with ServerProcess(tmp_path, "--open", "--store", postgres_dsn, "--node", "n1",
                       start_timeout=60) as first:
        peers = re.search(r"petridish: node n1 \(peers at (\S+)\)", "".join(first.output))
        assert peers is not None, first.output
        assert nodes_rows(postgres_dsn) == [("n1", peers.group(1))]
        with beating(postgres_dsn, "n1"):
            second = subprocess.run(
                [sys.executable, "-m", "server.cli", "serve", "--port", "0", "--data",
                 str(tmp_path), "--store", postgres_dsn, "--node", "n1"], cwd=REPO,
                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                check=False)
        assert second.returncode == 2, second.stderr
        assert re.fullmatch(r"petridish: another process runs as node 'n1' \(at "
                            + re.escape(peers.group(1)) + r", last heard \d+\.\d s ago\): "
                            r"give this one another --node name",
                            second.stderr.splitlines()[-1]), second.stderr
        assert nodes_rows(postgres_dsn) == [("n1", peers.group(1))]
        assert f"petridish: error log: {tmp_path / 'logs' / 'error-n1.log'}" in \
            "".join(first.output)
        assert first.stop() == 0
    assert nodes_rows(postgres_dsn) == []


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--lease-ttl", "nan", "'nan' is not a number of seconds from 0.5 to 300"),
    ("--lease-ttl", "-1", "'-1' is not a number of seconds from 0.5 to 300"),
    ("--lease-ttl", "0", "'0' is not a number of seconds from 0.5 to 300"),
    ("--lease-ttl", "1e9", "'1e9' is not a number of seconds from 0.5 to 300"),
    ("--peer-port", "70000", "'70000' is not a port (0 to 65535)"),
    ("--peer-port", "-1", "'-1' is not a port (0 to 65535)"),
    ("--peer-addr", "nonsense", "'nonsense' is not HOST:PORT (a port 1 to 65535)"),
    ("--peer-addr", ":9001", "':9001' is not HOST:PORT (a port 1 to 65535)"),
    ("--peer-addr", "10.0.0.5:0", "'10.0.0.5:0' is not HOST:PORT (a port 1 to 65535)"),
    ("--node", "../n1", ("'../n1' is not a node name: 1 to 64 letters, digits, '.', '_' "
                         "or '-', not starting with '.'")),
])
def test_a_bad_cluster_option_is_a_usage_error(
        option: str, value: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--store", "postgresql://nobody@127.0.0.1:1/none",
              f"{option}={value}"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"petridish serve: error: argument {option}: {says}"


def test_the_help_says_where_the_event_store_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "data directory: tokens, the error log and (without --store) the event store" in out


async def test_a_node_whose_name_another_process_took_stops_serving_and_exits(
        nodes: Nodes, postgres_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    """This process was silent for a while (paused) and another started under its name:
    a world it cannot place any more is refused as such (not as a database outage); its
    next heartbeat finds the row another's; it stops its worlds, and the server stops
    itself, saying why and that a restart under its name is no cure (`petridish serve`
    then exits non-zero)."""
    a = await nodes.start("a")
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", "counter:w")
    assert "counter:w" in a.directory.hosted()
    with trio.fail_after(10):  # just after a renewal: the next is a second away
        await a.cluster.leases._renewed.wait()
    await sql(postgres_dsn, "UPDATE nodes SET instance = 'another' WHERE node = 'a'")
    with pytest.raises(ProtocolError, match=r"^counter:z cannot be placed by this server: "
                       r"another process now serves as node 'a' and this one is stopping; "
                       r"retry in a moment$") as refused:
        await a.cluster.router.acquire("counter:z")
    assert refused.value.detail == {"actor": "counter:z", "replaced": "a"}
    with trio.fail_after(10):
        await a.ended.wait()
    assert a.running.state.fatal == "another process now serves as node 'a'"
    assert "stopping: another process now serves as node 'a' (this process serves nothing " \
        "more; do not restart it under the same --node)" in caplog.messages
    assert await sql(postgres_dsn, "SELECT node, instance FROM nodes") == [("a", "another")]


async def test_notifications_of_this_process_s_own_appends_count_as_its_own(
        nodes: Nodes) -> None:
    a = await nodes.start("a")
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", "counter:w")
    with trio.fail_after(10):
        while (own := await _notifications(a.running.url, "own")) < 1:
            await trio.sleep(0.05)
    assert own >= 1 and await _notifications(a.running.url, "other") == 0


async def _notifications(url: str, origin: str) -> float:
    """petridish_notifications_total{origin} on /metrics."""
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"{url}/metrics")).text
    sample = f'petridish_notifications_total{{origin="{origin}"}} '
    return float(next(line for line in text.splitlines()
                      if line.startswith(sample)).rpartition(" ")[2])
