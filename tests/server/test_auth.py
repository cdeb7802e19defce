"""server/auth.py: the owner token, hashed agent tokens, roles."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from server.auth import Principal, TokenError, TokenStore, hash_token


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_owner_token_created_once_with_mode_0600(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "data")
    token = store.ensure_owner_token()
    assert token is not None and len(token) > 40
    path = tmp_path / "data" / "owner.token"
    assert mode(path) == 0o600
    assert path.read_text().strip() == token
    # Second start (a new process): nothing printed, the same token still works.
    again = TokenStore(tmp_path / "data")
    assert again.ensure_owner_token() is None
    assert again.check(token) == Principal("owner", "owner")


def test_agent_tokens_are_stored_hashed_and_revocable(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    store.ensure_owner_token()
    token = store.create("agent", "bot-1")
    assert store.check(token) == Principal("agent", "bot-1")
    raw = (tmp_path / "tokens.json").read_text()
    assert token not in raw and hash_token(token) in raw
    assert mode(tmp_path / "tokens.json") == 0o600
    assert [(t.name, t.role) for t in store.list()] == [("bot-1", "agent")]
    assert store.check(token + "x") is None
    assert store.check("") is None and store.check(None) is None
    assert store.revoke("bot-1") is True
    assert store.check(token) is None
    assert store.revoke("bot-1") is False
    assert store.list() == []


def test_revoke_from_another_process_takes_effect(tmp_path: Path) -> None:
    server_view = TokenStore(tmp_path)
    token = TokenStore(tmp_path).create("agent", "a")
    assert server_view.check(token) == Principal("agent", "a")  # created elsewhere, seen here
    assert TokenStore(tmp_path).revoke("a")
    assert server_view.check(token) is None


@pytest.mark.parametrize(("role", "name", "message"), [
    ("spectator", "x", r"^role must be one of agent, owner, not 'spectator'$"),
    ("admin", "x", r"^role must be one of agent, owner, not 'admin'$"),
    ("agent", "", r"^name '' must be 1-64 characters"),
    ("agent", "a b", r"^name 'a b' must be 1-64 characters"),
    ("agent", "owner", r"^name 'owner' is reserved for the owner token$"),
])
def test_create_refuses_bad_input_and_changes_nothing(
        tmp_path: Path, role: str, name: str, message: str) -> None:
    store = TokenStore(tmp_path)
    store.create("agent", "keep")
    before = (tmp_path / "tokens.json").read_text()
    with pytest.raises(TokenError, match=message):
        store.create(role, name)
    assert (tmp_path / "tokens.json").read_text() == before


def test_duplicate_name_is_refused(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    first = store.create("agent", "dup")
    with pytest.raises(TokenError, match=r"^a token named 'dup' already exists; revoke it first$"):
        store.create("owner", "dup")
    assert store.check(first) == Principal("agent", "dup")
    assert len(json.loads((tmp_path / "tokens.json").read_text())["tokens"]) == 1


STRACE = shutil.which("strace")
SYSCALL = re.compile(r'^\d+ +(rename|renameat2?|mkdir|mkdirat|fsync)\((.*)\) += 0$')


@pytest.mark.skipif(STRACE is None, reason="strace shows the process's system calls")
def test_each_token_file_and_new_directory_is_synced_into_its_directory(
        tmp_path: Path) -> None:
    """A rename or a new directory is durable only once its parent directory is synced (an
    OS crash may undo it: a revoked token working again, a printed one unknown). The
    process's own system calls, as strace reports them, show each rename and mkdir under
    the data directory followed by a sync of its parent before the next rename."""
    data, log = tmp_path / "new" / "data", tmp_path / "strace.log"
    code = ("import sys; from server.auth import TokenStore; s = TokenStore(sys.argv[1]); "
            "s.ensure_owner_token(); s.create('agent', 'ann'); s.revoke('ann')")
    done = subprocess.run(
        [STRACE, "-f", "-y", "-o", str(log), "-e",
         "trace=rename,renameat,renameat2,mkdir,mkdirat,fsync",
         sys.executable, "-c", code, str(data)],
        cwd=Path(__file__).parents[2], env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True, text=True, check=False)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    owed: set[Path] = set()  # directories whose entries changed and were not synced yet
    renames = 0
    for line in log.read_text().splitlines():
        call = SYSCALL.match(line)
        if call is None or str(tmp_path) not in call[2]:
            continue
        name, args = call[1], call[2]
        if name == "fsync":
            owed.discard(Path(re.search(r"<(.*)>", args)[1]))
            continue
        if name.startswith("rename"):
            assert not owed, f"renamed before {sorted(owed)} was synced"
            renames += 1
        owed.add(Path(re.findall(r'"([^"]*)"', args)[-1 if name.startswith("rename") else 0]
                      ).parent)
    assert not owed, f"{sorted(owed)} never synced"
    assert renames == 3  # owner.token, tokens.json twice
