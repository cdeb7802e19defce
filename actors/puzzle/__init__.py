"""The puzzle room: a rule-rewriting block puzzle (seed 003) as pure, deterministic code.

Text blocks on the board spell rules (BABA IS YOU); pushing text rewrites them. Modules:

* `words.py` vocabulary and integer codes; `level.py` the JSON level format and its validation
  (`diagnostics.py` holds the path diagnostics); `keke.py` imports the Keke corpus.
* `rules.py` reads text into rules; `profiles.py` the rule profiles (`classic`, `keke`) as data.
* `turn.py` the turn (the only transition path) over `board.py`'s `Board`/`Context`, with
  `movement.py` and `contacts.py`; `mechanics/` declarative mechanics and the host types
  `plate_gate` and `frail_floor`.
* `game.py` the game API (`create_game`: step, undo, reset, restore, get_state, history) with
  `snapshot.py` for public snapshots; `codec.py` the compact `bytes` state key for solvers.
* Built on top (issue 4B): `solve.py` (solver); `fast.py` (its Keke fast path) with
  `fast_turn.py` (a turn's working state and the exact key codec), `guide.py` (the search's
  distance estimates and novelty) and `walks.py` (folding a lone YOU's free walks into one
  move); `pack.py` (packs), `share.py` (share links), `cli.py`
  (`petridish puzzle ...`).

`server/` may import `create_game`, `parse_level`, `check_level`, `import_keke_levels`,
`create_codec` and the error classes below; everything else is private to the package.
"""

from actors.exports import lazy_exports

# The public names, each with the module that holds it; they load on first use
# (actors/exports.py).
_PUBLIC = {
    "CodecError": "codec", "create_codec": "codec",
    "Diagnostic": "diagnostics", "LevelError": "diagnostics",
    "Game": "game", "create_game": "game",
    "import_keke_levels": "keke",
    "Level": "level", "check_level": "level", "parse_level": "level",
    "RestoreError": "snapshot",
}
__all__ = [
    "CodecError", "Diagnostic", "Game", "Level", "LevelError", "RestoreError", "check_level",
    "create_codec", "create_game", "import_keke_levels", "parse_level",
]
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
