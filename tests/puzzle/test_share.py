"""Share links: round trips, canonical form, and every kind of bad input."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from actors.puzzle import share
from actors.puzzle.level import parse_level
from actors.puzzle.pack import Pack, pack_of, parse_pack
from actors.puzzle.share import PREFIX, ShareError, canonical_json, make_link, open_link
from tests.puzzle.boards import make_level, sample_pack
from tests.utf16 import EMOJI


def link_of(raw: bytes) -> str:
    return PREFIX + base64.urlsafe_b64encode(zlib.compress(raw)).rstrip(b"=").decode()


def test_round_trip_is_exact_and_canonical() -> None:
    pack = parse_pack(sample_pack())
    link = make_link(pack)
    assert link.startswith("pd1.") and "=" not in link
    assert open_link(link) == pack
    assert make_link(parse_pack(json.loads(json.dumps(pack.to_json())))) == link


def test_unsupported_mechanic_in_a_link_is_rejected_on_decode() -> None:
    data = sample_pack()
    data["mechanics"].append("teleporter")
    with pytest.raises(ShareError) as err:
        open_link(link_of(canonical_json(data)))
    assert err.value.code == "invalid_content"
    assert [d.path for d in err.value.diagnostics] == ["mechanics[2]"]


def test_executable_mechanic_data_in_a_link_is_rejected() -> None:
    data = sample_pack()
    data["levels"][2]["mechanics"][0]["config"]["plates"] = ["javascript:alert(1)"]
    with pytest.raises(ShareError) as err:
        open_link(link_of(canonical_json(data)))
    assert err.value.code == "invalid_content"
    assert err.value.diagnostics[0].path == "levels[2].mechanics[0].config.plates[0]"


@pytest.mark.parametrize(("link", "code"), [
    ("pd2.eJyrrgUAAXUA-Q", "bad_prefix"),
    ("", "bad_prefix"),
    ("pd1.abc$def", "bad_base64"),
    ("pd1.abcde", "bad_base64"),
    (PREFIX + base64.urlsafe_b64encode(b"not zlib at all").decode().rstrip("="), "bad_zlib"),
    (PREFIX + base64.urlsafe_b64encode(zlib.compress(b'{"a":1}')[:-3]).decode().rstrip("="),
     "bad_zlib"),
    (link_of(b"\xff\xfe"), "bad_json"),
    (link_of(b"{not json"), "bad_json"),
    (link_of(b"[1, 2]"), "invalid_content"),
    (link_of(b'{"name": "x", "version": "1", "levels": [{"width": 0}]}'), "invalid_content"),
])
def test_bad_links(link: str, code: str) -> None:
    with pytest.raises(ShareError) as err:
        open_link(link)
    assert err.value.code == code


def test_decompression_bomb_is_cut_at_the_cap() -> None:
    bomb = link_of(b" " * (share.MAX_JSON_BYTES * 4))
    assert len(bomb) < 20_000
    with pytest.raises(ShareError, match=r"^the link inflates past 1048576 bytes$") as err:
        open_link(bomb)
    assert err.value.code == "too_large"


@pytest.mark.parametrize(("tail", "code"), [
    ("A" * (share.MAX_LINK_CHARS - len(PREFIX) - 1) + EMOJI, "too_large"),  # one unit over
    ("A" * (share.MAX_LINK_CHARS - len(PREFIX) - 2) + EMOJI, "bad_base64"),  # at the cap
    ("A" * (share.MAX_LINK_CHARS - len(PREFIX) + 1), "too_large")])
def test_a_links_length_counts_utf16_code_units(tail: str, code: str) -> None:
    with pytest.raises(ShareError) as err:
        open_link(PREFIX + tail)
    assert err.value.code == code


def test_size_caps_on_links(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ShareError) as err:
        open_link(PREFIX + "A" * share.MAX_LINK_CHARS)
    assert err.value.code == "too_large"
    pack = parse_pack(sample_pack())
    monkeypatch.setattr(share, "MAX_LINK_CHARS", 100)
    with pytest.raises(ShareError, match=r"^the link would be \d+ characters; at most 100 "):
        make_link(pack)
    monkeypatch.setattr(share, "MAX_JSON_BYTES", 100)
    with pytest.raises(ShareError, match=r"^the pack is \d+ bytes of JSON; a link holds at most"):
        make_link(pack)


@pytest.mark.parametrize(("name", "cut"), [
    ("A" * 150, "A" * 100),
    ("A" * 99 + EMOJI * 2, "A" * 99),  # the cut never keeps half of a pair
    (EMOJI * 60, EMOJI * 50),
], ids=["ascii", "split_pair", "emoji"])
def test_the_link_of_a_level_with_a_long_name_opens(name: str, cut: str) -> None:
    level = parse_level({**make_level(["B=Y", "b.."]), "name": name})
    pack = open_link(make_link(pack_of(level)))
    assert (pack.name, pack.levels) == (cut, (level,))


def test_a_link_is_made_only_of_a_pack_that_opens() -> None:
    level = parse_pack(sample_pack()).levels[0]
    with pytest.raises(ShareError, match=r"^the pack would not open: name: must be a non-empty "
                       r"string of at most 100 characters$") as err:
        make_link(Pack("A" * 101, "1", "classic", (), (level,)))
    assert err.value.code == "invalid_content"
    assert [d.path for d in err.value.diagnostics] == ["name"]


def test_a_small_link_of_many_bad_things_is_refused_with_a_bounded_message() -> None:
    level = '{"id":"%d","width":1,"height":1,"objects":[' + ",".join(["{}"] * 4096) + "]}"
    raw = '{"name":"x","version":"1","levels":[' + ",".join(level % i for i in range(50)) + "]}"
    link = link_of(raw.encode())
    assert len(link) < 1500
    with pytest.raises(ShareError) as err:
        open_link(link)
    assert err.value.code == "invalid_content" and len(err.value.diagnostics) == 51
    assert len(str(err.value)) < 4000
