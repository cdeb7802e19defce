"""The organism record as dealing, the pool and the breeders see it."""

from __future__ import annotations

import hashlib
import re

import attrs

from actors.lab.genome import ShaderGenome
from actors.lab.panel_genome import PanelGenome
from actors.lab.ratings import Rating


@attrs.frozen
class Organism:
    """One organism of the pool. `render_ok` is the proof that a browser compiled and drew
    it; `genome` is set for organisms the grammar wrote (so they can be crossed);
    `source` says which surface bore it (`daemon`, `owner`, `model`, `cross`, `import`);
    `client` is a cross's visitor (its client key), else empty."""

    id: str
    track: str
    code: str
    title: str | None = None
    parents: tuple[str, ...] = ()
    directive: str | None = None
    source: str = "daemon"
    genome: ShaderGenome | PanelGenome | None = None
    born: int = 0  # ms
    status: str = "alive"  # "alive" | "dead"
    render_ok: bool = False
    error: str | None = None  # the stored compile/link error of a dead organism
    rating: Rating = attrs.field(factory=Rating)
    judged: int = 0
    public_proof: int | None = None  # ms: when a judge's render report proved it
    client: str = ""

    @property
    def live(self) -> bool:
        """Alive and carrying no stored error."""
        return self.status == "alive" and self.error is None

    @property
    def proven(self) -> bool:
        """Live and rendered by a browser (render_ok set)."""
        return self.live and self.render_ok


def organism_id(track: str, code: str) -> str:
    """The content-derived id of an organism: identical code on a track is one organism."""
    return f"{track[0]}-{hashlib.sha256(code.encode()).hexdigest()[:16]}"


_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\S")


def token_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two sources' token sets (1.0 for identical token sets)."""
    ta, tb = set(_TOKEN.findall(a)), set(_TOKEN.findall(b))
    return len(ta & tb) / len(ta | tb) if ta | tb else 1.0
