"""The public judging page's voice track: our own text spoken by espeak-ng, encoded as
Ogg/Opus. I/O: runs `espeak-ng` and `opusenc` (Debian `espeak-ng`, `opus-tools`).

`petridish lab voice` (or `python -m actors.lab.voice`) remakes `web/lab/voice.ogg`.
The page drives `u_audio` from its own analysis of this track, so the passages vary
voice, pitch and speed to move the bass, mid and high bands, with short silences
between them (where `u_audio` falls to zero).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "web" / "lab" / "voice.ogg"
BITRATE_KBPS = 24
GAP_S = 0.8

# (espeak-ng voice, pitch 0-99, words per minute, text): the text is ours.
PASSAGES = (
    ("en-gb", 38, 150, ("Welcome to the Petri dish. Every image you see here was grown, "
                       "not drawn.")),
    ("en-us", 60, 165, ("Two organisms stand side by side. Watch them breathe, then choose "
                       "the one that holds your eye.")),
    ("en-gb-x-rp", 25, 140, ("Your choice feeds the culture. The strongest strains are "
                            "crossed, and their children come back to be judged.")),
    ("en-us", 75, 175, "Some are newborn, and your browser is the first to see them draw."),
    ("en-gb", 45, 150, "Listen. Look. And vote."),
)


class VoiceError(RuntimeError):
    """A tool is missing or failed; the message says which."""


def _tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise VoiceError(f"{name} not found: apt-get install -y {package}")
    return path


def make_voice(out: Path | None = None) -> Path:
    """Speak every passage, join them with silences, encode to Ogg/Opus at `out`."""
    out = out or OUT
    espeak, opusenc = _tool("espeak-ng", "espeak-ng"), _tool("opusenc", "opus-tools")
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for i, (voice, pitch, speed, text) in enumerate(PASSAGES):
            part = Path(tmp) / f"{i}.wav"
            _run([espeak, "-v", voice, "-p", str(pitch), "-s", str(speed), "-w", str(part),
                  text])
            parts.append(part)
        joined = Path(tmp) / "voice.wav"
        _join(parts, joined)
        out.parent.mkdir(parents=True, exist_ok=True)
        _run([opusenc, "--quiet", "--bitrate", str(BITRATE_KBPS), "--serial", "1",
              "--title", "Petri Dish voice track", "--artist", "espeak-ng",
              str(joined), str(out)])
    return out


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise VoiceError(f"{Path(argv[0]).name} failed: {proc.stderr.strip()[:300]}")


def _join(parts: list[Path], out: Path) -> None:
    """One WAV of the parts with GAP_S of silence before each but the first."""
    with wave.open(str(parts[0]), "rb") as first:
        params = first.getparams()
    gap = b"\0" * (round(params.framerate * GAP_S) * params.sampwidth * params.nchannels)
    with wave.open(str(out), "wb") as dst:
        dst.setparams(params)
        for i, part in enumerate(parts):
            with wave.open(str(part), "rb") as src:
                if src.getparams()[:3] != params[:3]:
                    raise VoiceError(f"{part.name}: espeak-ng changed its sample format")
                if i:
                    dst.writeframes(gap)
                dst.writeframes(src.readframes(src.getnframes()))


if __name__ == "__main__":
    try:
        print(make_voice())
    except VoiceError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
