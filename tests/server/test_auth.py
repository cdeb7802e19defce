"""server/auth.py: the owner token, hashed agent tokens, roles."""

from __future__ import annotations

import json
import stat
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
