"""The vocabulary: nouns, properties, operators, directions and the integer codes the engine uses.

Objects and text are both stored as integer `kind` codes so a board is a tuple of small-int tuples
(cheap to copy, hash and pack into a solver key): `kind < TEXT_BASE` is an object of `NOUNS[kind]`,
`kind >= TEXT_BASE` is a text block showing `WORDS[kind - TEXT_BASE]`.
"""

from __future__ import annotations

NOUNS: tuple[str, ...] = (
    "baba", "keke", "flag", "rock", "wall", "skull", "lava", "goop", "grass", "floor", "love",
    "water", "key", "door", "box", "tile", "plate", "gate", "hole", "tree", "star", "ice",
)
# `text` is a noun word with no object of its own: it names every text block.
TEXT_NOUN = "text"
PROPERTIES: tuple[str, ...] = (
    "you", "win", "stop", "push", "pull", "move", "sink", "defeat", "hot", "melt", "open", "shut",
    "weak", "float",
)
OPERATORS: tuple[str, ...] = ("is", "and", "not")
WORDS: tuple[str, ...] = NOUNS + (TEXT_NOUN,) + PROPERTIES + OPERATORS

NOUN_CODE: dict[str, int] = {name: i for i, name in enumerate(NOUNS)}
WORD_CODE: dict[str, int] = {name: i for i, name in enumerate(WORDS)}
TEXT_BASE = 64

# Facing codes; a MOVE object with no recorded facing starts facing right.
DIRECTIONS: tuple[str, ...] = ("right", "up", "left", "down")
FACING_CODE: dict[str, int] = {name: i for i, name in enumerate(DIRECTIONS)}
DELTAS: tuple[tuple[int, int], ...] = ((1, 0), (0, -1), (-1, 0), (0, 1))
REVERSE: tuple[int, ...] = (2, 3, 0, 1)
# The single-letter move alphabet of the corpus and the CLI; `s` is a wait.
MOVE_LETTERS: dict[str, str] = {
    "r": "right", "u": "up", "l": "left", "d": "down", "s": "wait",
}
WAIT = "wait"


def kind_name(kind: int) -> str:
    """Readable name of a kind code: `baba` for an object, `text:baba` for a text block."""
    return f"text:{WORDS[kind - TEXT_BASE]}" if kind >= TEXT_BASE else NOUNS[kind]


def text_kind(word: str) -> int:
    """Kind code of the text block showing `word`."""
    return TEXT_BASE + WORD_CODE[word]
