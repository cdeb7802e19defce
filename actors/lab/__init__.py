"""The lab: a pool of generated organisms (GLSL ES 3.00 shaders, HTML/CSS panels) under a
fixed contract, admitted by static validation, proven by a browser, judged in pairs.

- `contract`: the prelude, the clauses for each track, the fixed panel data block.
- `validate` (`validate_shader`, `validate_panel`): `validate(track, code) -> reason | None`.
- `genome`, `panel_genome`, `breed`: organisms without a model (grammar + crossover/mutation);
  `gene_groups` holds the group-wise drawing and crossover both genomes share.
- `model_breeder`: births through an OpenAI-compatible chat-completions endpoint.
- `directives`: prompt evolution of aesthetic directives (mutate, explore, aesthetics check).
- `ratings`: openskill live ratings, conservative ordinal, Bradley-Terry refit from the log.
- `organism`, `dealing`: the organism record; which surface may show what; canary reports.
- `store`: the SQLite catalogue (versioned migrations, transactional writes).
- `seeding`: one seeded stream per purpose.

The server may import `validate`, `Catalogue`, the dealing functions, `CanaryBook`,
`ModelBreeder` and `contract_text` from here; everything else is private to the package.
"""

from actors.exports import lazy_exports

# The public names, each with the module that holds it; they load on first use
# (actors/exports.py).
_PUBLIC = {
    "PANEL_DATA": "contract", "SHADER_PRELUDE": "contract", "contract_text": "contract",
    "CanaryBook": "dealing", "PublicPair": "dealing", "Verdict": "dealing",
    "breeding_parents": "dealing", "cross_refusal": "dealing", "gallery": "dealing",
    "owner_pair": "dealing", "public_pair": "dealing",
    "Birth": "model_breeder", "ModelBreeder": "model_breeder",
    "Organism": "organism",
    "BirthOutcome": "store", "Catalogue": "store", "CatalogueError": "store",
    "validate": "validation",
}
__all__ = [
    "PANEL_DATA", "SHADER_PRELUDE", "Birth", "BirthOutcome", "CanaryBook", "Catalogue",
    "CatalogueError", "ModelBreeder", "Organism", "PublicPair", "Verdict", "breeding_parents",
    "contract_text", "cross_refusal", "gallery", "owner_pair", "public_pair", "validate",
]
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)

