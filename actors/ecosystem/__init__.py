"""LifePot: a petri-dish ecosystem. Setup answers (world, threat, reward) become a
validated LifeConfig and rule graph; a seeded, deterministic density-field simulation
advances it a generation at a time; rule patches and scheduled changes steer it; a run
replays bit for bit without any model.

The world is a run, `ecosystem:<run id>`: created from three answers (its creator owns
it), advanced generation by generation to 180, steered by its owner, watched by anyone.
`rules.py` is the whole world as one `World` value; `actor.py` adds its effects (the model
setup off the task, the generation timer, the density snapshots, the reflection's
phrasing) and exports `WORLD`. Every module but `actor.py` is pure: no trio, no clock,
seeded numpy only.

- `errors`      the one error type (closed codes, exact messages) and strict-shape checks
- `setup`       answers schema, `hash_setup_request`, LifeConfig, `normalize_fitness`
- `keywords`    `deterministic_setup`: the fixed keyword table, the labelled fallback
- `graph`       rule graph validation, `default_rule_graph`, RulePatch and `apply_patch`
- `schedule`    accepted decisions, triggers, durations (reverting only what a change still
                holds), ramps and pulses
- `rates`       config + graph + generation -> per-species rates (scalars, `math`)
- `sim`         `Fields`: the numpy fields and the per-generation update, metrics, digests
- `engine`      the step API: `start(config, graph, seed)`, `step(state, decisions_due)`,
                frames
- `density`     the fields for spectators: downsampled, quantised to bytes
- `score`       the five fitness components
- `run`         `simulate`: a batch run over `engine` and its replayable record
- `replay`      re-run a record and compare digests
- `export`      a run's stored events as JSON lines, and the record they make
- `endpoint`    `ModelEndpoint`: where the model lives (URL, model, key)
- `model_options` the `--model-*` options (argparse only, for a light `petridish --help`)
- `model_client` the chat-completions client and the call budget (a busy endpoint asked again)
- `intent`      the named-intent contract (organisms as spans, stated roles and links)
- `interpret`   the live interpretation pipeline with its labelled fallback
- `events`      the run's events (frozen attrs) and their stored JSON
- `reflect`     the end of a run: score breakdown by fitness weight, engine-derived facts
- `phrase`      the reflection in a model's words: one budgeted call, labelled
- `tools`       the MCP tools for runs: create, view, history, control, patch, schedule
- `snapshot`    the run's state as a JSON store snapshot and back, exactly
- `rules`       the run world: state, `evolve`, moves, reads, `advance`, `setup_events`
- `actor`       `EcosystemActor`, the effects; `WORLD`
- `cli`         `petridish ecosystem setup | validate-graph | run | replay`

`server/` may import `WORLD` from here (and `ModelEndpoint` from `endpoint`: the server's
one model endpoint, which every actor finds in `ActorContext.model`).
"""

from actors.exports import lazy_exports

__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, {"WORLD": "actor"})
