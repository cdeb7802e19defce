"""`petridish token create|list|revoke`, and what a running server makes of the tokens."""

from __future__ import annotations

import contextlib
import io
import stat
from pathlib import Path

import pytest
import trio

from protocol.client import Client, RequestError
from server.cli import main
from tests.server.server_process import ServerProcess


class Ran:
    """What one CLI run printed and returned."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def petridish(*args: str) -> Ran:
    """Run the `petridish` entry point in-process (argparse errors exit with 2)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Ran(code, out.getvalue(), err.getvalue())


def test_create_list_revoke(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    made = petridish("token", "create", "--role", "agent", "--name", "bot-1", "--data", data)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("pdg_") and len(token) > 40
    tokens_file = tmp_path / "data" / "tokens.json"
    assert stat.S_IMODE(tokens_file.stat().st_mode) == 0o600
    assert token not in tokens_file.read_text()  # stored hashed

    again = petridish("token", "create", "--name", "bot-1", "--data", data)
    assert (again.returncode, again.stdout) == (2, "")
    assert again.stderr == "petridish: a token named 'bot-1' already exists; revoke it first\n"
    bad_role = petridish("token", "create", "--role", "spectator", "--name", "x", "--data", data)
    assert bad_role.returncode == 2 and "invalid choice: 'spectator'" in bad_role.stderr

    listing = petridish("token", "list", "--data", data)
    assert listing.returncode == 0
    assert [line.split("\t")[:2] for line in listing.stdout.splitlines()] == [["bot-1", "agent"]]
    assert token not in listing.stdout

    gone = petridish("token", "revoke", "bot-1", "--data", data)
    assert (gone.returncode, gone.stdout) == (0, "petridish: revoked bot-1\n")
    missing = petridish("token", "revoke", "bot-1", "--data", data)
    assert (missing.returncode, missing.stderr) == (1, "petridish: no token named 'bot-1'\n")
    assert petridish("token", "list", "--data", data).stdout == ""


async def test_a_running_server_honours_issue_and_revoke(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServerProcess(data) as server:
        owner = server.owner_token
        assert owner is not None
        assert stat.S_IMODE((data / "owner.token").stat().st_mode) == 0o600
        made = await trio.to_thread.run_sync(
            petridish, "token", "create", "--name", "agent-7", "--data", str(data))
        token = made.stdout.strip()
        async with Client.connect(server.ws_url, token=token) as c:
            assert (c.role, c.hello["name"]) == ("agent", "agent-7")
            created = await c.request("lobby.create", args={"kind": "counter", "name": "t"})
            assert created == {"id": "counter:t", "revision": 1}
        async with Client.connect(server.ws_url, token=owner) as c:
            assert c.role == "owner"
        await trio.to_thread.run_sync(petridish, "token", "revoke", "agent-7", "--data",
                                      str(data))
        # Revoked while the server runs: the next hello is refused.
        with pytest.raises(RequestError) as info:
            async with Client.connect(server.ws_url, token=token):
                pass
        assert info.value.code == "unauthorized"
        # SIGTERM is the graceful shutdown: exit code 0 after the server's own goodbye.
        assert await trio.to_thread.run_sync(server.stop) == 0
        assert "petridish: shutting down\n" in server.output
        assert server.output[-1].endswith("server stopped\n")
