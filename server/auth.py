"""Access tokens: who is speaking on a connection, and with which role.

Roles are those of `protocol.roles` (spectator < agent < owner); a spectator
needs no token, so tokens are issued for `TOKEN_ROLES` only. The owner token is created on the first start and kept
in plaintext in `<data>/owner.token` (mode 0600) so the owner can read it back;
agent tokens are issued by `petridish token create` and only their SHA-256 lives
on disk (`<data>/tokens.json`, mode 0600). Tokens are 256 random bits, so one
unsalted hash is enough; comparisons are constant-time.

The CLI and a running server share the files: `check` re-reads `tokens.json`
whenever it changed on disk, so a revoke takes effect without a restart.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs

from protocol.roles import TOKEN_ROLES

OWNER_NAME = "owner"
OWNER_FILE = "owner.token"
TOKENS_FILE = "tokens.json"
_LOCK_FILE = ".tokens.lock"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TOKEN_PREFIX = "pdg_"


class TokenError(ValueError):
    """A token command was refused (bad role, bad or duplicate name); nothing changed."""


@attrs.frozen
class Principal:
    """The identity a connection speaks as after `hello`."""

    role: str
    name: str
    # The SHA-256 of the issued token it spoke with ("" for the owner and anonymous callers),
    # to notice a revoke; not part of the identity.
    digest: str = attrs.field(default="", eq=False)


@attrs.frozen
class TokenInfo:
    """One issued token as `list()` shows it (never the token itself)."""

    name: str
    role: str
    created: str


def hash_token(token: str) -> str:
    """Hex SHA-256 of a token: what `tokens.json` stores."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _new_token() -> str:
    return _TOKEN_PREFIX + secrets.token_urlsafe(32)


def _sync_dir(path: Path) -> None:
    """Make the entries of directory `path` durable: until it is synced, an OS crash may
    undo a rename or a new file in it (a revoked token working again)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dir(path: Path, mode: int = 0o777) -> None:
    """Create directory `path` and its missing parents, each one's entry made durable."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    for made in reversed(missing):
        _sync_dir(made.parent)


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` atomically and durably with mode 0600 (never briefly
    world-readable)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the umask cannot widen it, but an old tmp file might exist
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _sync_dir(path.parent)


class TokenStore:
    """The owner token and the hashed agent tokens of one data directory."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir)
        self._owner: str | None = None
        self._entries: dict[str, dict[str, str]] = {}  # name -> {"role", "sha256", "created"}
        self._stamp: tuple[int, int, int] | None = None  # (inode, size, mtime_ns) of tokens.json

    # ---- owner token ------------------------------------------------------

    def repair(self) -> None:
        """Make the directory 0700 and the token files in it 0600: repair a widened mode
        rather than trust it (the store holds every field's solution)."""
        _make_dir(self.data_dir, 0o700)
        os.chmod(self.data_dir, 0o700)
        for name in (OWNER_FILE, TOKENS_FILE, _LOCK_FILE):
            try:
                os.chmod(self.data_dir / name, 0o600)
            except FileNotFoundError:
                pass

    def ensure_owner_token(self) -> str | None:
        """Create the owner token if absent; return it only when it was just created.

        `serve` calls it once it listens and prints the returned value, so the first start
        that serves shows it; later starts return None and the owner reads
        `<data>/owner.token` if they lost it.
        """
        path = self.data_dir / OWNER_FILE
        with self._locked():
            if path.exists():
                self._owner = path.read_text("utf-8").strip()
                return None
            token = _new_token()
            _write_private(path, token + "\n")
            self._owner = token
            return token

    def _owner_token(self) -> str | None:
        if self._owner is None:
            path = self.data_dir / OWNER_FILE
            if path.exists():
                self._owner = path.read_text("utf-8").strip()
        return self._owner

    def is_owner(self, token: str) -> bool:
        """True when `token` is the owner token (a cheap check: no other token is read)."""
        owner = self._owner_token()
        return bool(token) and owner is not None and hmac.compare_digest(
            token.encode(), owner.encode())

    # ---- agent tokens -----------------------------------------------------

    def create(self, role: str, name: str) -> str:
        """Issue a token for `name` with `role`; returns the plaintext (shown once).

        Raises TokenError for a role that is not issuable, a malformed name, or a
        name already in use.
        """
        if role not in TOKEN_ROLES:
            raise TokenError(f"role must be one of {', '.join(TOKEN_ROLES)}, not {role!r}")
        if not _NAME_RE.match(name):
            raise TokenError(
                f"name {name!r} must be 1-64 characters of letters, digits, '_', '.', '-'"
                " starting with a letter or digit")
        if name == OWNER_NAME:
            raise TokenError(f"name {OWNER_NAME!r} is reserved for the owner token")
        with self._locked():
            entries = self._read_entries()
            if name in entries:
                raise TokenError(f"a token named {name!r} already exists; revoke it first")
            token = _new_token()
            created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            entries[name] = {"role": role, "sha256": hash_token(token), "created": created}
            self._write_entries(entries)
        return token

    def revoke(self, name: str) -> bool:
        """Delete the token named `name`; False when there was none."""
        with self._locked():
            entries = self._read_entries()
            if entries.pop(name, None) is None:
                return False
            self._write_entries(entries)
        return True

    def list(self) -> list[TokenInfo]:
        """Issued tokens sorted by name (the owner token is not listed)."""
        self._refresh()
        return [TokenInfo(name, e["role"], e["created"]) for name, e in sorted(self._entries.items())]

    def check(self, token: str | None) -> Principal | None:
        """The principal a presented token stands for, or None when it is unknown.

        `None` or "" means no token was presented and also returns None; the
        caller decides whether that is a spectator.
        """
        if not token:
            return None
        owner = self._owner_token()
        if owner is not None and hmac.compare_digest(token.encode(), owner.encode()):
            return Principal("owner", OWNER_NAME)
        self._refresh()
        digest = hash_token(token)
        found: Principal | None = None
        # Visit every entry so the time taken does not depend on which one matched.
        for name, entry in self._entries.items():
            if hmac.compare_digest(digest, entry["sha256"]):
                found = Principal(entry["role"], name, digest)
        return found

    def digests(self) -> dict[str, str]:
        """name -> SHA-256 of every issued token, as on disk now."""
        self._refresh()
        return {name: e["sha256"] for name, e in self._entries.items()}

    # ---- files ------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialize writers across processes (the CLI beside a running server)."""
        _make_dir(self.data_dir)
        fd = os.open(self.data_dir / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _refresh(self) -> None:
        """Reload `tokens.json` when its identity or content changed on disk."""
        path = self.data_dir / TOKENS_FILE
        try:
            st = path.stat()
        except FileNotFoundError:
            self._entries, self._stamp = {}, None
            return
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if stamp != self._stamp:
            self._entries = self._read_entries()
            self._stamp = stamp

    def _read_entries(self) -> dict[str, dict[str, str]]:
        path = self.data_dir / TOKENS_FILE
        try:
            data = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        return dict(data["tokens"])

    def _write_entries(self, entries: dict[str, dict[str, str]]) -> None:
        text = json.dumps({"version": 1, "tokens": entries}, indent=2, sort_keys=True) + "\n"
        _write_private(self.data_dir / TOKENS_FILE, text)
        self._entries, self._stamp = dict(entries), None
