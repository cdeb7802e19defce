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

from actors.lab.contract import PANEL_DATA, SHADER_PRELUDE, contract_text
from actors.lab.dealing import (
    CanaryBook,
    PublicPair,
    Verdict,
    breeding_parents,
    cross_refusal,
    gallery,
    owner_pair,
    public_pair,
)
from actors.lab.model_breeder import Birth, ModelBreeder
from actors.lab.organism import Organism
from actors.lab.store import BirthOutcome, Catalogue, CatalogueError
from actors.lab.validate import validate

__all__ = [
    "PANEL_DATA", "SHADER_PRELUDE", "Birth", "BirthOutcome", "CanaryBook", "Catalogue",
    "CatalogueError", "ModelBreeder", "Organism", "PublicPair", "Verdict", "breeding_parents",
    "contract_text", "cross_refusal", "gallery", "owner_pair", "public_pair", "validate",
]
