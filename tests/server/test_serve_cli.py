"""`petridish serve`'s start as an operator meets it: a bad option or an address it cannot
bind is one line saying why (exit 2), not a traceback; the owner token is printed by the
first start that serves; a second server refused its data directory writes nothing into the
first one's error log; the token and lock files' widened modes are repaired."""

from __future__ import annotations

import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from server.auth import TokenStore
from tests.server.server_process import REPO, ServerProcess


def _refused_start(server: ServerProcess, port: int = 0) -> str:
    """What `server` printed when its start failed (exit code 2)."""
    with pytest.raises(RuntimeError, match="exited before listening"):
        server.start(port)
    assert server.proc is not None and server.proc.wait(10) == 2
    said = "".join(server.output)
    assert "Traceback" not in said, said
    return said


@pytest.mark.parametrize(("option", "said"), [
    (["--port", "99999"], "argument --port: '99999' is not a port (0 to 65535)"),
    (["--port", "-1"], "argument --port: '-1' is not a port (0 to 65535)"),
    (["--trusted-proxy", "notanaddr"], ("argument --trusted-proxy: 'notanaddr' is not an IP "
                                        "address or network (e.g. 127.0.0.1, 10.0.0.0/8)")),
])
def test_a_bad_option_is_a_usage_error(tmp_path: Path, option: list[str], said: str) -> None:
    """`--port 99999` listened on 34463 (the port wrapped); a trusted proxy that is no
    address failed the start with a traceback."""
    run = subprocess.run([sys.executable, "-m", "server.cli", "serve", *option, "--data",
                          str(tmp_path / "data")], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 2 and said in run.stderr, run.stderr
    assert not (tmp_path / "data").exists()


def test_an_address_it_cannot_bind_is_one_line_and_the_token_waits(tmp_path: Path) -> None:
    """A busy port or an address not this host's: one line, exit 2 (a traceback before). The
    owner token is made by the first start that listens, which prints it: it was made
    before the bind and never printed."""
    data = tmp_path / "data"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        said = _refused_start(ServerProcess(data), port)
        assert f"petridish: cannot listen on 127.0.0.1:{port}: Address already in use" \
            in said, said
    said = _refused_start(ServerProcess(data, "--host", "192.0.2.1"))
    assert "petridish: cannot listen on 192.0.2.1:0: Cannot assign requested address" \
        in said, said
    assert not (data / "owner.token").exists()
    with ServerProcess(data) as server:
        assert server.owner_token is not None
        assert (data / "owner.token").read_text().strip() == server.owner_token


def test_a_second_server_writes_nothing_into_the_first_ones_log(tmp_path: Path) -> None:
    """The second server's start used to log (its descriptor limit) into the running
    server's error log before the data directory's lock refused it."""
    data = tmp_path / "data"
    with ServerProcess(data):
        log = data / "logs" / "error.log"
        before = log.read_text()
        said = _refused_start(ServerProcess(data))
        assert "is in use by another server" in said, said
        assert log.read_text() == before


def test_a_start_repairs_the_token_and_lock_files_modes(tmp_path: Path) -> None:
    """docs/operations.md: every file in the data directory 0600, repaired at start;
    tokens.json and the lock files kept a widened mode."""
    data = tmp_path / "data"
    tokens = TokenStore(data)
    tokens.ensure_owner_token()
    tokens.create("agent", "ann")
    (data / "server.lock").touch()
    files = ["owner.token", "tokens.json", ".tokens.lock", "server.lock"]
    for name in files:
        (data / name).chmod(0o644)
    data.chmod(0o755)
    with ServerProcess(data):
        modes = {name: stat.S_IMODE((data / name).stat().st_mode) for name in files}
        assert modes == dict.fromkeys(files, 0o600)
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
