"""The counter world, `counter:<name>`: a durable total with notes.

It is the smallest world and the template a newcomer copies: `rules.py` is the whole
world (state, events, codec, moves, reads, view) as one `World` value; the generic host
runs it, so there is no actor module. Tests, benchmarks and the lobby page use it to
exercise the server end to end (each `counter.add` is one validated, durable, published
event).

`server/` may import `WORLD` from here.
"""

from actors.exports import lazy_exports

__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, {"WORLD": "rules"})
