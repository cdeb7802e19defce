"""The lab arena, `lab:<name>` (`lab:main` exists by default): a pool of generated
organisms (GLSL ES 3.00 shaders, HTML/CSS panels) under a fixed contract, admitted by
static validation, proven by a browser, judged in pairs, bred with or without a model.

The world is one `World` value, `actor.WORLD` (the table `rules.WORLD` with its effect
actor), over these modules:

- `actor`: `LabActor`, the effects: the birth ops with `validate` off the actor's task,
  and the birth loop (grammar, or the server's model endpoint).
- `rules`: the moves (owner's arena, public judging, directives); `views`: the reads and
  what each surface shows; `offers`: the two pure halves of a birth around `validate`;
  `state`: the pool as a fold of `events` (their JSON codec too), with the seed's
  in-memory records (deals, strikes, benching, candidates validating) folded from
  transient events.
- `dealing`: which organisms each surface may show; `canary`: the seed's report and
  vote rules; `births`: candidates and the events they become once validated.
- `contract`: the prelude, the clauses of each track, the fixed panel data block.
- `validation` (`validate_shader`, `glsl_text`, `glsl_preprocess`, `shader_loops`,
  `validate_panel`, `panel_css`): `validate(track, code) -> reason | None`, reading the
  source as the compiler and the browser do.
- `genome`, `panel_genome`, `gene_groups`, `breed`: organisms without a model;
  `model_breeder`: births through an OpenAI-compatible chat-completions endpoint;
  `directives`: prompt evolution of aesthetic directives; `ratings`: openskill ratings
  and a Bradley-Terry refit; `organism`: the organism record; `seeding`: one seeded
  stream per purpose.
- `catalogue_import`: reads a SQLite catalogue written before the event stream (I/O);
  `voice`: regenerates the judging page's voice track (runs espeak-ng; I/O); `cli`:
  `petridish lab ...` (the headless gate itself is `server/lab_gate.py`).

`server/` may import `WORLD` from here (and `validate`, `SHADER_PRELUDE`,
`contract_text`, `ModelBreeder`); everything else is private to the package.
"""

from actors.exports import lazy_exports

# The public names, each with the module that holds it; they load on first use
# (actors/exports.py), so `petridish --help` imports no engine.
_PUBLIC = {"WORLD": "actor"}  # the world hub's export (server/worlds.py)
# Engine names reachable through the hub too, for commands and tools.
_ENGINE = {"validate": "validation", "SHADER_PRELUDE": "contract",
           "contract_text": "contract", "ModelBreeder": "model_breeder"}
__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, {**_PUBLIC, **_ENGINE})
