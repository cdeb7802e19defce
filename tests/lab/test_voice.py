"""The judging page's voice track: shipped small, as Ogg/Opus, and remade bit for bit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from actors.lab.voice import OUT, make_voice
from server.cli import main


def test_the_shipped_track_is_a_small_ogg_opus_file() -> None:
    data = OUT.read_bytes()
    assert data[:4] == b"OggS" and b"OpusHead" in data[:100]
    assert 20_000 < len(data) < 300_000
    assert "espeak-ng" in (OUT.parent / "README.md").read_text()


def test_the_track_is_remade_bit_for_bit(tmp_path: Path, capsys) -> None:
    if not (shutil.which("espeak-ng") and shutil.which("opusenc")):
        pytest.skip("espeak-ng or opusenc (Debian espeak-ng, opus-tools) is not installed")
    out = tmp_path / "voice.ogg"
    assert make_voice(out).read_bytes() == OUT.read_bytes()
    assert main(["lab", "voice", "--out", str(tmp_path / "again.ogg")]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'again.ogg'} (")
