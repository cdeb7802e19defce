"""Data-only share links: `pd1.` + base64url(zlib(canonical JSON of a pack)).

A link carries a pack (a single level travels as a one-level pack) and nothing else: decoding
never evaluates anything, it only parses JSON and then revalidates it with `pack.check_pack`,
so an unsupported mechanic or a malformed level is refused exactly as a pack file would be.

Caps: a link is at most `MAX_LINK_CHARS` characters and its JSON at most `MAX_JSON_BYTES`
bytes; decompression stops one byte past that cap, so a small link that inflates to gigabytes
(a decompression bomb) costs no more than the cap. Every failure raises `ShareError` with a
stable `code`: bad_prefix, bad_base64, bad_zlib, too_large, bad_json, invalid_content.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from typing import Any

from protocol.text import utf16_len

from .diagnostics import Diagnostic
from .pack import Pack, check_header, check_pack

PREFIX = "pd1."
MAX_LINK_CHARS = 65_536
MAX_JSON_BYTES = 1_048_576
_ALPHABET = re.compile(r"^[A-Za-z0-9_-]*$")


class ShareError(ValueError):
    """A share link that cannot be made or opened; `code` says which rule it broke."""

    def __init__(self, code: str, message: str,
                 diagnostics: tuple[Diagnostic, ...] = ()) -> None:
        self.code = code
        self.diagnostics = diagnostics
        super().__init__(message)


def canonical_json(data: Any) -> bytes:
    """UTF-8 JSON with sorted keys and no spaces: equal data gives equal bytes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def make_link(pack: Pack) -> str:
    """The share link of a pack of validated levels; raises `ShareError` when it would not
    open: `invalid_content` for a bad header (`pack.check_header`), `too_large` past a cap."""
    data = pack.to_json()
    problems = check_header(data)
    if problems:
        raise ShareError("invalid_content", "the pack would not open: "
                         + "; ".join(str(d) for d in problems), tuple(problems))
    raw = canonical_json(data)
    if len(raw) > MAX_JSON_BYTES:
        raise ShareError("too_large", f"the pack is {len(raw)} bytes of JSON; a link holds at "
                         f"most {MAX_JSON_BYTES}")
    body = base64.urlsafe_b64encode(zlib.compress(raw, 9)).rstrip(b"=").decode("ascii")
    link = PREFIX + body
    if len(link) > MAX_LINK_CHARS:
        raise ShareError("too_large", f"the link would be {len(link)} characters; at most "
                         f"{MAX_LINK_CHARS} are allowed")
    return link


def open_link(link: str) -> Pack:
    """The pack a share link carries, revalidated; raises `ShareError` on any problem."""
    if not isinstance(link, str) or not link.startswith(PREFIX):
        raise ShareError("bad_prefix", f"a share link starts with {PREFIX!r}")
    if (chars := utf16_len(link)) > MAX_LINK_CHARS:
        raise ShareError("too_large", f"the link is {chars} characters; at most "
                         f"{MAX_LINK_CHARS} are allowed")
    body = link[len(PREFIX):]
    if not _ALPHABET.match(body) or len(body) % 4 == 1:
        raise ShareError("bad_base64", "the link body is not base64url (A-Z a-z 0-9 - _)")
    try:
        packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ShareError("bad_base64", f"the link body is not base64url: {exc}") from None
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(packed, MAX_JSON_BYTES + 1)
    except zlib.error as exc:
        raise ShareError("bad_zlib", f"the link body is not zlib data: {exc}") from None
    if len(raw) > MAX_JSON_BYTES or inflate.unconsumed_tail:
        raise ShareError("too_large", f"the link inflates past {MAX_JSON_BYTES} bytes")
    if not inflate.eof or inflate.unused_data:
        raise ShareError("bad_zlib", "the link body is truncated or has trailing data")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ShareError("bad_json", f"the link does not hold JSON: {exc}") from None
    pack, diags = check_pack(data)
    if pack is None:
        raise ShareError("invalid_content", "the shared pack is invalid: "
                         + "; ".join(str(d) for d in diags), tuple(diags))
    return pack
