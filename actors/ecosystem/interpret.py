"""Live setup interpretation: a model reads the answers into a config and rule graph,
bounded by a call budget, validated at every step, with a labelled deterministic fallback.

The pipeline (six calls; at most thirteen with corrections):

1. `mapping`   the named intent (`intent.py`): organisms -> slots A..D as spans of the
               original `world`/`threat` text, with any roles and links the answers state.
               A duplicate identity gets one `mapping_correction` (earlier valid slots stay
               fixed; the palette drops assigned and overlapping mentions).
2. `environment` config environment, fitness, founders and the graph environment.
3. `roles`     a role and self-interaction for each fixed organism.
4. `links`     one mode per canonical pair, given the fixed species and roles; a broken
               food-web invariant or a dropped stated link gets one food-web correction.
5. `fidelity`  approve / reselect / reject, reading the original answers, the full config,
               the encoded graph and an engine-derived food web. A nonapproval must select
               its focus from the graph's finite parts (a species, a pair, the environment).
               It gets one correction (roles, links, review again) that must keep the named
               intent and be approved; otherwise, or when the correction fails, it stays
               `blocked`, always with a focus from that finite set.
6. `council`   a Choice whose selected label must have maximal probability; one
               `council_correction`; probabilities are kept exactly as returned.

Text the model chooses or writes (an organism's span, a council label or focus) must be one
line of plain text (`protocol.jsontext.plain_text`: no NUL, lone surrogate or control
character), or the stage's output is invalid. Any other failure returns
`deterministic_setup` labelled as the fallback, with a finite stage and code. Diagnostics
hold only our own contract messages, never provider text.
"""

from __future__ import annotations

import copy
from typing import Any

import attrs

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.graph import (
    ENVIRONMENT_VOCABULARY,
    GRAPH_ERROR,
    PAIR_MODES,
    ROLES,
    SELF_MODES,
    SPECIES_IDS,
    canonical_pairs,
    feeding_edges,
    validate_council,
    validate_rule_graph,
)
from actors.ecosystem.intent import (
    ContractConflict,
    NamedIntent,
    output_shape,
    palette,
    parse_mapping,
)
from actors.ecosystem.keywords import FALLBACK_SOURCE, deterministic_setup
from actors.ecosystem.model_client import CallBudget, Client, ModelFailure, Usage
from actors.ecosystem.setup import (
    CONFIG_VOCABULARY,
    FITNESS_KEYS,
    canonical_answers,
    validate_config,
)

MAX_CALLS = 13
MODEL_SOURCE = "model"
ENVIRONMENT_FOCUS = "environment"
NONMAXIMAL = "Council selection does not have maximal probability"

SYSTEM: dict[str, str] = {
    "map_organisms": "Name 2-4 organisms of this world as exact spans of the original world "
                     "or threat text, each a distinct organism, slots A, B, C, D in order; add "
                     "a role or feeding link only where the answers state it. Reply with JSON "
                     "{\"organisms\": [{\"slot\", \"source\", \"start\", \"end\", \"role\"?}], "
                     "\"links\"?: [{\"eater\", \"eaten\"}]}.",
    "environment": "Choose the environment, fitness weights (total 1), founders and world "
                   "environment from the closed vocabularies. Reply with JSON {\"environment\", "
                   "\"fitness\", \"founders\", \"world\"}.",
    "roles": "Give each fixed organism a role and a self-interaction. Reply with JSON "
             "{\"species\": [{\"slot\", \"role\", \"self\"}]}.",
    "links": "Give one mode for every listed pair, in order, using each pair's own endpoints. "
             "Reply with JSON {\"interactions\": [{\"pair\", \"mode\"}]}.",
    "review": "Judge whether this interpreted world keeps the food-web intent of the original "
              "answers. Reply with JSON {\"verdict\": \"approve\"|\"reselect\"|\"reject\", "
              "\"focus\": one of focus_options, required unless you approve}.",
    "council": "Select a council label for this world with a probability for each option. "
               "Reply with JSON {\"choice\": {\"selected\", \"options\": [{\"label\", "
               "\"probability\"}]}}; the selected label must have maximal probability.",
}


@attrs.frozen
class Interpretation:
    """The outcome of setup interpretation.

    status: `accepted` (model config and graph), `fallback` (deterministic setup,
    labelled, with the failure that caused it) or `blocked` (fidelity review did not
    approve; no config). Named intent and failure metadata stay outside replay.
    """

    status: str
    answers: dict[str, str]
    source: str | None = None
    config: dict[str, Any] | None = None
    graph: dict[str, Any] | None = None
    named_intent: dict[str, Any] | None = None
    failure: dict[str, Any] | None = None
    review_focus: str | None = None
    calls: int = 0
    usage: Usage = attrs.field(factory=Usage)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = attrs.asdict(self, recurse=False)
        out["usage"] = attrs.asdict(self.usage)
        return out


class DeterministicInterpreter:
    """No model: the keyword table, labelled as the deterministic fallback."""

    def interpret(self, answers: Any) -> Interpretation:
        """Deterministic setup of `answers`."""
        result = deterministic_setup(answers)
        return Interpretation("fallback", canonical_answers(answers), FALLBACK_SOURCE,
                              result["config"], result["graph"])


class ModelInterpreter:
    """The live pipeline over a chat-completions client with a per-setup call budget."""

    def __init__(self, client: Client, max_calls: int = MAX_CALLS) -> None:
        self.client = client
        self.max_calls = max_calls

    def interpret(self, answers: Any) -> Interpretation:
        """Run the pipeline; falls back (labelled) on any failure outside fidelity review."""
        answers = canonical_answers(answers)
        session = _Session(self.client, CallBudget(self.max_calls), answers)
        try:
            return session.run()
        except ModelFailure as failure:
            result = deterministic_setup(answers)
            return Interpretation(
                "fallback", answers, FALLBACK_SOURCE, result["config"], result["graph"],
                session.intent_dict(),
                {"stage": failure.stage, "code": failure.code, "conflicts": session.conflicts},
                None, session.budget.reserved, session.budget.usage)


def review_focuses(graph: dict[str, Any]) -> list[str]:
    """The finite parts of a graph a nonapproving review may select as its focus: each
    species id, each canonical pair and the environment."""
    ids = [s["id"] for s in graph["species"]]
    return ids + canonical_pairs(len(ids)) + [ENVIRONMENT_FOCUS]


def food_web(graph: dict[str, Any]) -> list[str]:
    """Readable feeding lines, decoded from each pair's own endpoints: who eats whom (a
    scavenger also eats their dead, as the engine's model does) and who eats the basal
    resource."""
    roles = {s["id"]: s["role"] for s in graph["species"]}
    names = {s["id"]: f"{s['name']} ({s['id']}, {s['role']})" for s in graph["species"]}
    lines = [f"{names[eater]} eats {names[eaten]}"
             + (" and its dead" if roles[eater] == "scavenger" else "")
             for eater, eaten in feeding_edges(graph)]
    lines += [f"{names[s['id']]} eats the basal resource" for s in graph["species"]
              if s["role"] in ("producer", "grazer", "omnivore")]
    return lines


@attrs.define
class _Session:
    client: Client
    budget: CallBudget
    answers: dict[str, str]
    intent: NamedIntent | None = None
    conflicts: list[str] = attrs.field(factory=list)

    def intent_dict(self) -> dict[str, Any] | None:
        """The named intent in JSON form, once established."""
        return None if self.intent is None else self.intent.as_dict()

    def call(self, stage: str, task: str, request: dict[str, Any]) -> Any:
        """One budgeted provider call (`CallBudget.call`: tried again while unavailable)."""
        return self.budget.call(self.client, stage, SYSTEM[task], {"task": task, **request})

    def invalid(self, stage: str, conflict: str, code: str = "invalid_output") -> ModelFailure:
        """Record a contract conflict (our words) and build the stage's failure."""
        self.conflicts.append(conflict)
        return ModelFailure(stage, code)

    def run(self) -> Interpretation:
        """The six stages with their corrections; raises ModelFailure for a fallback."""
        self.intent = self.mapping()
        config, world = self.environment()
        graph = self.graph(world, "roles", "links")
        verdict, focus = self.review(config, graph, "fidelity")
        if verdict != "approve":
            try:
                corrected = self.graph(world, "roles_correction", "links_recorrection", focus)
                verdict, again = self.review(config, corrected, "fidelity_correction")
            except ModelFailure as failure:
                self.conflicts.append(f"correction failed at {failure.stage}: {failure.code}")
                verdict, again = "not_approved", None
            if verdict != "approve":
                return Interpretation(
                    "blocked", self.answers, None, None, None, self.intent_dict(),
                    {"stage": "fidelity", "code": "not_approved", "conflicts": self.conflicts},
                    again or focus, self.budget.reserved, self.budget.usage)
            graph = corrected
        graph["council"] = self.council(graph)
        graph = validate_rule_graph(graph)
        config["rules"] = graph
        return Interpretation("accepted", self.answers, MODEL_SOURCE, validate_config(config),
                              graph, self.intent_dict(), None, None, self.budget.reserved,
                              self.budget.usage)

    # -- 1. named intent: organisms -> slots

    def mapping(self) -> NamedIntent:
        """Organisms -> slots, with one corrective call for a duplicate identity."""
        request = {"answers": self.answers, "slots": list(SPECIES_IDS),
                   "palette": palette(self.answers, [])}
        intent, duplicate = self.parse(self.call("mapping", "map_organisms", request), "mapping")
        if duplicate is None:
            return intent
        fixed = list(intent.organisms[:duplicate])
        conflict = f"slot {SPECIES_IDS[duplicate]} repeats an earlier organism"
        self.conflicts.append(conflict)
        request = {"answers": self.answers, "slots": list(SPECIES_IDS), "fixed": fixed,
                   "palette": palette(self.answers, fixed), "conflict": conflict}
        corrected, duplicate = self.parse(
            self.call("mapping_correction", "map_organisms", request), "mapping_correction")
        if duplicate is not None or list(corrected.organisms[:len(fixed)]) != fixed:
            raise self.invalid("mapping_correction", "corrected mapping is still inconsistent",
                               "duplicate_identity")
        return corrected

    def parse(self, data: Any, stage: str) -> tuple[NamedIntent, int | None]:
        """A mapping response, or the stage's `invalid_output` failure."""
        try:
            return parse_mapping(data, self.answers)
        except ContractConflict as conflict:
            raise self.invalid(stage, str(conflict)) from None

    # -- 2. environment, fitness, founders

    def environment(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The config (environment, fitness, founders) and the graph environment."""
        vocabulary = {**CONFIG_VOCABULARY, "fitness": FITNESS_KEYS,
                      "world": ENVIRONMENT_VOCABULARY}
        data = self.call("environment", "environment", {
            "answers": self.answers, "organisms": self.names(), "vocabulary": vocabulary})
        out = output_shape
        try:
            out.obj(data, "", ("environment", "fitness", "founders", "world"))
            for section, fields in CONFIG_VOCABULARY.items():
                out.obj(data[section], section, tuple(fields))
            out.obj(data["fitness"], "fitness", FITNESS_KEYS)
            out.obj(data["world"], "world", tuple(ENVIRONMENT_VOCABULARY))
            world = {field: out.enum(data["world"][field], f"world.{field}", vocabulary)
                     for field, vocabulary in ENVIRONMENT_VOCABULARY.items()}
            # Known keys only from here on, so the config's messages quote no model text.
            config = validate_config({k: data[k] for k in ("environment", "fitness", "founders")})
        except ContractConflict as conflict:
            raise self.invalid("environment", str(conflict)) from None
        except EcosystemError as err:
            raise self.invalid("environment", err.message) from None
        return config, world

    # -- 3 + 4. roles, then directed links for the fixed species

    def graph(self, world: dict[str, str], roles_stage: str, links_stage: str,
              focus: str | None = None) -> dict[str, Any]:
        """Roles, then links; the graph must validate and keep the named intent."""
        request: dict[str, Any] = {"answers": self.answers, "organisms": self.names(),
                                   "vocabulary": {"role": ROLES, "self": SELF_MODES}}
        if focus is not None:
            request["focus"] = focus
        species = self.roles(self.call(roles_stage, "roles", request), roles_stage)
        request = {"answers": self.answers, "species": species,
                   "pairs": canonical_pairs(len(species)), "modes": PAIR_MODES}
        if self.intent is not None and self.intent.links:
            request["links"] = [{"eater": a, "eaten": b} for a, b in self.intent.links]
        conflict = self.links(species, world, self.call(links_stage, "links", request),
                              links_stage)
        if isinstance(conflict, dict):
            return conflict
        self.conflicts.append(conflict)  # one food-web correction, told what was wrong
        stage = f"{links_stage}_food_web"
        fixed = self.links(species, world, self.call(stage, "links",
                                                     {**request, "conflict": conflict}), stage)
        if isinstance(fixed, dict):
            return fixed
        raise self.invalid(stage, fixed, "food_web")

    def roles(self, data: Any, stage: str) -> list[dict[str, Any]]:
        """Graph species from a roles response; established roles must be kept."""
        names = self.names()
        out = output_shape
        try:
            out.obj(data, "", ("species",))
            items = out.array(data["species"], "species", len(names), len(names))
            species = []
            for k, (item, named) in enumerate(zip(items, names, strict=True)):
                out.obj(item, f"species[{k}]", ("slot", "role", "self"))
                out.enum(item["slot"], f"species[{k}].slot", (named["slot"],))
                species.append({"id": named["slot"], "name": named["name"],
                                "role": out.enum(item["role"], f"species[{k}].role", ROLES),
                                "self": out.enum(item["self"], f"species[{k}].self",
                                                 SELF_MODES)})
        except ContractConflict as conflict:
            raise self.invalid(stage, str(conflict)) from None
        assert self.intent is not None
        dropped = self.intent.species_conflicts(species)
        if dropped:
            raise self.invalid(stage, dropped[0])
        return species

    def links(self, species: list[dict[str, Any]], world: dict[str, str], data: Any,
              stage: str) -> dict[str, Any] | str:
        """The validated graph, or the invariant / named-intent conflict to correct."""
        try:
            output_shape.obj(data, "", ("interactions",))
            items = output_shape.array(data["interactions"], "interactions", 0, 16)
            for k, item in enumerate(items):
                output_shape.obj(item, f"interactions[{k}]", ("pair", "mode"))
            graph = validate_rule_graph({"version": 1, "species": species,
                                         "interactions": items, "environment": world})
        except ContractConflict as conflict:
            raise self.invalid(stage, str(conflict)) from None
        except EcosystemError as err:
            if err.message == GRAPH_ERROR:
                raise self.invalid(stage, f"{GRAPH_ERROR} at {err.path}") from None
            return err.message
        assert self.intent is not None
        dropped = self.intent.conflicts(graph)
        return dropped[0] if dropped else graph

    # -- 5. fidelity review

    def review(self, config: dict[str, Any], graph: dict[str, Any], stage: str
               ) -> tuple[str, str | None]:
        """Fidelity verdict and optional focus for `graph` against the original answers."""
        full = copy.deepcopy(config)
        full["rules"] = graph
        focuses = review_focuses(graph)
        data = self.call(stage, "review", {"answers": self.answers, "config": full,
                                           "graph": graph, "food_web": food_web(graph),
                                           "focus_options": focuses})
        out = output_shape
        try:
            out.obj(data, "", ("verdict",), ("focus",))
            verdict = out.enum(data["verdict"], "verdict", ("approve", "reselect", "reject"))
            focus = out.enum(data["focus"], "focus", focuses) if "focus" in data else None
        except ContractConflict as conflict:
            raise self.invalid(stage, str(conflict)) from None
        if verdict != "approve" and focus is None:
            raise self.invalid(stage, "a nonapproval must select a focus")
        return verdict, focus

    # -- 6. council Choice

    def council(self, graph: dict[str, Any]) -> dict[str, Any]:
        """A Choice with a maximal selection; one budgeted correction, never renormalized."""
        request = {"graph": graph, "food_web": food_web(graph)}
        for stage in ("council", "council_correction"):
            data = self.call(stage, "council", request)
            try:
                output_shape.obj(data, "", ("choice",))
                output_shape.obj(data["choice"], "choice", ("selected", "options"), ("focus",))
                options = output_shape.array(data["choice"]["options"], "choice.options", 1, 8)
                for k, option in enumerate(options):
                    output_shape.obj(option, f"choice.options[{k}]", ("label", "probability"))
                    output_shape.line(option["label"], f"choice.options[{k}].label")
                output_shape.line(data["choice"].get("focus"), "choice.focus")
                return validate_council(data["choice"], "choice")
            except ContractConflict as conflict:
                raise self.invalid(stage, str(conflict)) from None
            except EcosystemError as err:
                if err.message != NONMAXIMAL:
                    raise self.invalid(stage, f"invalid council metadata at {err.path}") from None
                self.conflicts.append(NONMAXIMAL)
                request = {**request, "conflict": NONMAXIMAL}
        raise ModelFailure("council_correction", "nonmaximal_choice")

    def names(self) -> list[dict[str, str]]:
        """Slot and name of each established organism."""
        assert self.intent is not None
        return self.intent.names()
