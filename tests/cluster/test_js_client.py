"""web/js/client.js (run by Node's built-in WebSocket) sends a request id on every request
and, with `retry`, sends a write again with it after a dropped connection: applied once;
it paces its frames under the bucket of the socket they go out on, and a request's
timeout counts its wait for a reconnect."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from server.budgets import Budgets
from tests.server import burn_world
from tests.server.tcp_proxy import Proxy
from tests.server.ws_harness import raw_client, result, running_server

REPO = Path(__file__).resolve().parents[2]
WORLD = "counter:js"
SCRIPT = """
import { Client } from "%(client)s";
import * as readline from "node:readline";
const input = readline.createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();
const c = await Client.connect("%(url)s");
await c.request("counter.create", "%(world)s");
console.log("ready");
await lines.next();  // the test holds the proxy, then cuts it while the write waits
input.close();
const first = await c.request("counter.add", "%(world)s", { amount: 9 });  // retried by default
const again = await c.request("counter.add", "%(world)s", { amount: 9 },
                              { requestId: "js-1" });
const twice = await c.request("counter.add", "%(world)s", { amount: 9 },
                              { requestId: "js-1" });
console.log(JSON.stringify({ first, again, twice, connections: c.connections }));
c.close();
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    probe = subprocess.run([node, "--experimental-websocket", "-e",
                            "process.exit(typeof WebSocket === 'function' ? 0 : 1)"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("this node has no WebSocket (node 20.10+ with --experimental-websocket)")
    return node


def _script(tmp_path: Path, name: str, template: str, port: int) -> Path:
    """The node script `template` at `tmp_path/name`, for the client module and the server
    (or proxy) at `port`."""
    script = tmp_path / name
    script.write_text(template % {"client": (REPO / "web" / "js" / "client.js").as_uri(),
                                  "url": f"ws://127.0.0.1:{port}/ws", "world": WORLD})
    return script


async def _run_once(node: str, script: Path) -> Any:
    """Run `script` to its end; the JSON of its last line of output."""
    with trio.fail_after(30):
        done = await trio.run_process([node, "--experimental-websocket", str(script)],
                                      capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return json.loads(done.stdout.decode().splitlines()[-1])


class _Running:
    """A node script running with its standard input and output piped to the test."""

    def __init__(self, proc: trio.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout, self.out = proc, proc.stdin, proc.stdout, b""

    @classmethod
    async def start(cls, node: str, script: Path) -> _Running:
        return cls(await trio.lowlevel.open_process(
            [node, "--experimental-websocket", str(script)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE))

    async def until(self, marker: bytes) -> None:
        """Read its output until `marker` is in it."""
        while marker not in self.out:
            self.out += await self.stdout.receive_some()

    async def to_end(self) -> Any:
        """Read its output to the end; it must exit 0. The JSON of its last line."""
        while chunk := await self.stdout.receive_some():
            self.out += chunk
        assert await self.proc.wait() == 0
        return json.loads(self.out.decode().splitlines()[-1])


async def test_the_js_client_retries_a_write_with_its_request_id(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    node = _node()
    async with running_server(tmp_path / "data", open_mode=True) as srv:
        proxy = Proxy(srv.port)
        await nursery.start(proxy.run)
        script = _script(tmp_path, "retry.mjs", SCRIPT, proxy.port)
        run = await _Running.start(node, script)
        with trio.fail_after(30):
            await run.until(b"ready\n")
            proxy.hold()
            await run.stdin.send_all(b"go\n")
            await trio.sleep(0.5)
            proxy.cut()
            result = await run.to_end()
        assert result["first"] == {"total": 9, "adds": 1, "revision": 2}
        assert result["again"] == {"total": 18, "adds": 2, "revision": 3}
        assert result["twice"] == result["again"]
        assert result["connections"] == 2
        stored = await srv.state.directory.store.read(WORLD)
        assert [e.data.get("amount") for e in stored] == [None, 9, 9]


PACED = """
import { Client } from "%(client)s";
const c = await Client.connect("%(url)s");
await c.request("counter.create", "%(world)s");
const adds = Array.from({ length: 60 },
                        () => c.request("counter.add", "%(world)s", { amount: 1 }));
const revisions = (await Promise.all(adds)).map((r) => r.revision);
console.log(JSON.stringify({ pace: [c.hello.rate, c.hello.burst], revisions }));
c.close();
"""


async def test_the_js_client_paces_itself_under_the_bucket(tmp_path: Path) -> None:
    """60 requests at once on a connection allowed 40 frames a second in bursts of 10:
    the client waits for its tokens, and every request is answered."""
    node = _node()
    async with running_server(tmp_path / "data", open_mode=True, rate=40.0, burst=10) as srv:
        result = await _run_once(node, _script(tmp_path, "paced.mjs", PACED, srv.port))
    assert result["pace"] == [40.0, 10]
    assert sorted(result["revisions"]) == list(range(2, 62))


RECONNECT_PACED = """
import { Client } from "%(client)s";
let away;
const reconnecting = new Promise((resolve) => { away = resolve; });
const c = await Client.connect("%(url)s", {
  onStatus: (status) => { if (status === "reconnecting") away(); } });
await c.request("counter.create", "%(world)s");
console.log("ready");
await reconnecting;
const adds = Array.from({ length: 60 }, () => c.request("counter.add", "%(world)s", { amount: 1 })
  .then((r) => r.revision, (err) => err.code ?? err.name));
console.log(JSON.stringify(await Promise.all(adds)));
c.close();
"""


async def test_the_js_client_paces_the_requests_that_waited_for_a_reconnect(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    """60 requests made while the socket is down (40 frames a second in bursts of 10): they
    go out on the new socket under its bucket, none refused `rate_limited`."""
    node = _node()
    async with running_server(tmp_path / "data", open_mode=True, rate=40.0, burst=10) as srv:
        proxy = Proxy(srv.port)
        await nursery.start(proxy.run)
        script = _script(tmp_path, "reconnect_paced.mjs", RECONNECT_PACED, proxy.port)
        run = await _Running.start(node, script)
        with trio.fail_after(30):
            await run.until(b"ready\n")
            proxy.cut()
            result = await run.to_end()
    assert [r for r in result if not isinstance(r, int)] == []  # before: some rate_limited
    assert sorted(result) == list(range(2, 62))


TOO_LARGE = """
import { Client } from "%(client)s";
const c = await Client.connect("%(url)s");
await c.request("counter.create", "%(world)s");
const refused = await c.request("counter.add", "%(world)s", { amount: 1, note: "x".repeat(70000) },
                                { timeout: 5000 }).catch((err) => [err.name, err.message, err.detail]);
const after = await c.request("counter.get", "%(world)s");
console.log(JSON.stringify({ refused, after }));
c.close();
"""


async def test_the_js_client_refuses_a_frame_over_max_frame_at_once(tmp_path: Path) -> None:
    """The server answers a frame over `max_frame` with `id: null`: the client refuses it as
    the server would instead of waiting out its timeout for a reply that never names it."""
    node = _node()
    async with running_server(tmp_path / "data", open_mode=True) as srv:
        result = await _run_once(node, _script(tmp_path, "too_large.mjs", TOO_LARGE, srv.port))
    assert result["refused"] == ["RequestError", "too_large: the frame is longer than 65536 bytes",
                                 {"max_frame": 65536}]
    assert result["after"] == {"total": 0, "adds": 0, "revision": 1}


PATIENT = """
import { Client } from "%(client)s";
import * as readline from "node:readline";
const input = readline.createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();
const c = await Client.connect("%(url)s");
const spin = (ms, options) => c.request("burn.spin", "burn:x", { ms }, options);
const sleep = (s) => new Promise((wake) => setTimeout(wake, s * 1000));
console.log("open");
await lines.next();  // another client keeps the server busy from here on
await spin(80);  // its server time, spent
const hurried = await spin(1, { timeout: 300 }).then(
  () => null, (err) => [err.code, err.detail.budget, err.detail.retry_after]);
await sleep(hurried[2]);
await spin(80);  // spent again
const started = performance.now();
const patient = await spin(1);
const waited = (performance.now() - started) / 1000;
await spin(80);
const subscribed = (await c.subscribe("lobby:main", () => {}).ready).topic;
await spin(80);
const dropped = c.subscribe("burn:z", () => {});
const before = await Promise.race([dropped.ready.then(() => "followed", (err) => err.code),
                                   sleep(0.5).then(() => "waiting")]);
dropped.close();  // while its subscribe waits to be sent again: it is not
const after = await dropped.ready.then(() => "followed", (err) => err.code);
await sleep(0.5);
console.log(JSON.stringify({ hurried: hurried.slice(0, 2), patient, waited, subscribed,
                             dropped: [before, after] }));
await lines.next();  // the test looked at what the server follows for it
input.close();
c.close();
"""


async def test_the_js_client_waits_out_a_spent_cpu_budget_before_sending_again(
        tmp_path: Path) -> None:
    """Refused `over_budget` `cpu` (its client's server time spent while others use the
    server), a request or subscription is sent again after `retry_after`, unless that is
    past its timeout (then the refusal is the caller's) or the subscription was closed
    meanwhile."""
    node = _node()
    budgets = Budgets(cpu_rate=0.05, cpu_burst_anonymous=0.05)  # 80 ms: 1 s to refill
    async with running_server(tmp_path / "data", budgets=budgets,
                              **burn_world.settings()) as srv:
        script = _script(tmp_path, "patient.mjs", PATIENT, srv.port)
        run = await _Running.start(node, script)
        with trio.fail_after(30):
            await run.until(b"open\n")
            async with burn_world.others_busy(srv):
                await run.stdin.send_all(b"go\n")
                await run.until(b"dropped")
                followed = dict(srv.state.ledger.accounts["address:127.0.0.1"].followed)
                await run.stdin.send_all(b"end\n")
                outcome = await run.to_end()
        refusals = srv.state.metrics.budget_hits.labels("cpu").value
    assert outcome["hurried"] == ["over_budget", "cpu"]
    assert outcome["patient"] == {"ms": 1} and outcome["waited"] > 0.5
    assert outcome["subscribed"] == "lobby:main"
    assert outcome["dropped"] == ["waiting", "over_budget"]
    assert followed == {"lobby:main": 1}  # not burn:z, closed while it waited
    assert refusals >= 4  # the hurried one, the patient request's, each subscription's


UNREACHABLE = """
import { Client } from "%(client)s";
let away;
const reconnecting = new Promise((resolve) => { away = resolve; });
const c = await Client.connect("%(url)s", {
  onStatus: (status) => { if (status === "reconnecting") away(); } });
console.log("ready");
await reconnecting;
const outcome = await c.request("lobby.list", null, {}, { timeout: 1000 })
  .then(() => "answered", (err) => err.name);
console.log(JSON.stringify({ outcome }));
"""


async def test_the_js_client_times_out_a_request_while_it_reconnects(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    """The time a request waits for a reconnect counts against its timeout: while the
    server does not answer the new socket's handshake it rejects TimeoutError."""
    node = _node()
    async with running_server(tmp_path / "data", open_mode=True) as srv:
        proxy = Proxy(srv.port)
        await nursery.start(proxy.run)
        script = _script(tmp_path, "reconnecting.mjs", UNREACHABLE, proxy.port)
        run = await _Running.start(node, script)
        try:
            with trio.fail_after(15):
                await run.until(b"ready\n")
                proxy.cut()
                proxy.hold()  # the reconnect's handshake gets no answer
                await run.until(b"outcome")
        finally:
            run.proc.kill()
            await run.proc.wait()
    assert json.loads(run.out.decode().splitlines()[-1]) == {"outcome": "TimeoutError"}


CLOSED_WHILE_RECONNECTING = """
import { Client } from "%(client)s";
import * as readline from "node:readline";
const input = readline.createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();
const statuses = [];
const c = await Client.connect("%(url)s", {
  onStatus: (status) => { statuses.push(status); console.log(status); } });
await lines.next();  // the reconnect's socket is open, its handshake held
c.close();
console.log("closed");
await lines.next();  // the handshake was let through
await new Promise((wake) => setTimeout(wake, 500));
console.log(JSON.stringify({ connections: c.connections, statuses }));
process.exit(0);
"""


async def test_a_js_client_closed_while_it_reconnects_stays_closed(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    """`close()` while a reconnect's socket is being opened: that socket is closed when it
    opens, not greeted (no connection is kept, no subscription resumed)."""
    node = _node()
    async with running_server(tmp_path / "data", open_mode=True) as srv:
        proxy = Proxy(srv.port)
        await nursery.start(proxy.run)
        script = _script(tmp_path, "closed.mjs", CLOSED_WHILE_RECONNECTING, proxy.port)
        run = await _Running.start(node, script)
        with trio.fail_after(15):
            await run.until(b"open\n")
            proxy.cut()
            proxy.hold()  # the reconnect's handshake gets no answer, for now
            while proxy.accepted < 2:
                await trio.sleep(0.01)
            await run.stdin.send_all(b"close\n")
            await run.until(b"closed\n")
            proxy.release()
            await run.stdin.send_all(b"go\n")
            result = await run.to_end()
    assert result == {"connections": 1, "statuses": ["open", "reconnecting", "closed"]}


TWO_REFUSED = """
import { Client } from "%(client)s";
import * as readline from "node:readline";
const input = readline.createInterface({ input: process.stdin });
const log = [];  // its statuses and pushes, in order
const said = (line) => { log.push(line); console.log(line); };
const c = await Client.connect("%(url)s", {
  onStatus: (status, info) => said(status === "refused" ? `refused ${info.topic}` : status) });
for (const topic of ["counter:a", "counter:b"]) {
  await c.subscribe(topic, (push) => said(`push ${topic} ${push.rev}`)).ready;
}
said("ready");
for await (const world of input) {  // one followed again: its replies before this one's
  await c.request("counter.get", world);
  said(`settled ${world}`);
}
console.log(JSON.stringify(log));
c.close();
process.exit(0);
"""


async def test_a_js_client_says_open_only_once_no_followed_topic_is_refused(
        tmp_path: Path) -> None:
    """Two followed worlds stop and refuse the client's resubscribes: the first let go
    again leaves the client saying the other's refusal, not "open", until that one is
    followed again too."""
    node = _node()
    async with running_server(tmp_path / "data") as srv, \
            raw_client(srv, srv.owner_token) as owner:
        for world in ("counter:a", "counter:b"):
            result(await owner.call("counter.create", world))
        script = _script(tmp_path, "refused.mjs", TWO_REFUSED, srv.port)
        run = await _Running.start(node, script)
        with trio.fail_after(30):
            await run.until(b"ready\n")
            for world in ("counter:a", "counter:b"):
                result(await owner.call("admin.stop", "admin:main", id=world))
            await run.until(b"refused counter:a\n")
            await run.until(b"refused counter:b\n")
            for world in ("counter:a", "counter:b"):
                result(await owner.call("admin.release", "admin:main", id=world))
                result(await owner.call("counter.add", world, amount=1))
                await run.until(f"push {world} 2\n".encode())
                await run.stdin.send_all(f"{world}\n".encode())
                await run.until(f"settled {world}\n".encode())
            await run.stdin.aclose()
            log = await run.to_end()
    after = log[log.index("ready") + 1:]
    assert "open" not in after[:after.index("settled counter:a")], log
    assert after.count("open") == 1, log
    assert not any(line.startswith("refused") for line in after[after.index("open"):]), log


LET_GO = """
import { Client } from "%(client)s";
import * as readline from "node:readline";
const input = readline.createInterface({ input: process.stdin });
const c = await Client.connect("%(url)s", { onStatus: (status, info) =>
  console.log(status === "refused" ? `refused ${info.topic}` : status) });
const a = c.subscribe("counter:a", () => {});
await a.ready;
await c.subscribe("counter:b", () => {}).ready;
console.log("ready");
for await (const _ of input) a.close();  // let the refused one go
console.log(JSON.stringify("done"));
c.close();
process.exit(0);
"""


async def test_a_js_client_that_lets_its_refused_topic_go_says_open(tmp_path: Path) -> None:
    """The only refused topic closed while it is tried again: the client says "open" (it
    went on saying the refusal for good)."""
    node = _node()
    async with running_server(tmp_path / "data") as srv, \
            raw_client(srv, srv.owner_token) as owner:
        for world in ("counter:a", "counter:b"):
            result(await owner.call("counter.create", world))
        run = await _Running.start(node, _script(tmp_path, "let-go.mjs", LET_GO, srv.port))
        with trio.fail_after(30):
            await run.until(b"ready\n")
            result(await owner.call("admin.stop", "admin:main", id="counter:a"))
            await run.until(b"refused counter:a\n")
            await run.stdin.send_all(b"let go\n")
            said = len(run.out)  # (it said "open" once connected)
            while b"open\n" not in run.out[said:]:
                run.out += await run.stdout.receive_some()
            await run.stdin.aclose()
            assert await run.to_end() == "done"
