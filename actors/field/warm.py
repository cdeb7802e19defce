"""The compiled solver's first-use compile, paid ahead of the first player.

The referee's propagation, the tile solver and the givens search are numba kernels
compiled on first use and cached on disk (`cache=True`: beside the sources, or in
NUMBA_CACHE_DIR). On a fresh clone that first use compiles them all (about 13 s on the
shared 2-core machine); with the cache it loads them in well under a second. `warm()`
is that first use, on a tiny field: `make serve` runs it (`petridish field warm`) before
the server starts, and `petridish serve` runs it again in the background as it starts,
so no player's first field pays the compile.
"""

from __future__ import annotations

import numpy as np

from actors.field import referee
from actors.field.events import GameRules, ManifestEvent
from actors.field.fold import apply_event, new_state
from actors.field.generate import generate_scatter


def warm() -> int:
    """Generate a 16 x 16 field and referee one reveal and one commit on it (every kernel
    once, with the argument types play uses); the number of cells the commit judged."""
    field = generate_scatter(1, 16)
    s = apply_event(new_state(), ManifestEvent(rev=1, t=0, manifest=field.manifest,
                                               rules=GameRules()))
    join = referee.join(s, np.random.default_rng(0), name="warm", model="", user="",
                        harness="", t=0)
    assert not isinstance(join, referee.Refusal)
    s = apply_event(s, join)
    shown = referee.reveal(s, field, agent=join.agent, tile=join.seed_tile, t=0)
    assert not isinstance(shown, referee.Refusal)
    s = apply_event(s, shown)
    cells = s.geo.tiles[join.seed_tile].cells
    batch = [[int(c), int(field.solution[c])] for c in cells if s.values[int(c)] < 0]
    judged = referee.commit(s, field, agent=join.agent, cells=batch, intent="warm", t=0)
    assert not isinstance(judged, referee.Refusal)
    return len(batch)
