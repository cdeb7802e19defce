"""The run world as pure functions: create, advance to 180 with patches and a scheduled
change, graph-version evidence, the owner's rights, and a replay of the stored events.

`Table` stands in for the generic host (not written yet): it checks the op's role,
structures the args with the strict converter (bounds included), calls `decide`, folds
the events with `evolve`, keeps their stored JSON and builds the reply.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

from actors.ecosystem import engine
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.events import config_hash, decode
from actors.ecosystem.export import export_lines, parse_export, record_of_export
from actors.ecosystem.interpret import Interpretation
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.replay import replay
from actors.ecosystem.rules import WORLD, advance, setup_events
from actors.ecosystem.setup import hash_setup_request
from actors.world import Refusal
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import ecosystem as ops
from server.cli import main
from tests.ecosystem.table import ANSWERS, OTHER, OWNER, Table, created, self_patch


def test_create_sets_up_deterministically_and_labels_the_source() -> None:
    table = Table()
    info = table.call("ecosystem.create", {"answers": {k: f"  {v} " for k, v in
                                                        ANSWERS.items()}, "size": 16})
    setup, frame0 = (decode(e) for e in table.stored)
    expected = deterministic_setup(ANSWERS)
    assert table.stored[0]["type"] == "setup" and table.stored[1]["type"] == "generation"
    assert (setup.source, setup.owner, setup.answers) == ("deterministic_fallback", OWNER,
                                                          ANSWERS)
    assert (setup.config, setup.graph) == (expected["config"], expected["graph"])
    assert setup.config_hash == config_hash(setup.config, setup.graph)
    assert setup.answers_hash == hash_setup_request(ANSWERS) == info["answers_hash"]
    assert info == {"status": "ready", "generation": 0, "source": "deterministic_fallback",
                    "answers_hash": setup.answers_hash, "config_hash": setup.config_hash,
                    "seed": setup.seed, "graph_version": 1, "failure": None}
    assert frame0.frame["generation"] == 0 and frame0.frame["digest"]
    again = table.call("ecosystem.create", {"answers": ANSWERS})
    assert again.code == ErrorCode.ALREADY_EXISTS and len(table.stored) == 2
    # No seed given: drawn from the run's own generator, so two runs differ, and one
    # run's draw is reproducible.
    other = Table("ecosystem:other")
    other.call("ecosystem.create", {"answers": ANSWERS, "size": 16})
    assert decode(other.stored[0]).seed != setup.seed
    assert max(setup.seed, decode(other.stored[0]).seed) <= ops.MAX_SEED  # a client holds it
    same = Table()
    same.call("ecosystem.create", {"answers": ANSWERS, "size": 16})
    assert decode(same.stored[0]).seed == setup.seed


@pytest.mark.parametrize(("activation", "at", "fires"), [
    ("immediate", 0, 1), ("after_6", 0, 6), ("after_12", 3, 15), ("after_24", 0, 24),
    ("population_boom", 0, 2)])
def test_from_generation_is_the_first_generation_a_change_may_fire(
        activation: str, at: int, fires: int) -> None:
    """The reply and the view say when the engine may first fire it: a delay counts, a
    trigger comparing two generations waits for generation 2."""
    table = created()
    change = {"generation": at, "activation": activation, "duration": "short",
              "transition": "abrupt", "patch": {"kind": "environment", "field": "pressure",
                                                "value": "heat_wave"}}
    assert table.call("ecosystem.schedule", {"change": change})["from_generation"] == fires
    view = table.call("ecosystem.view", {})["view"]
    assert view["decisions"][0]["from_generation"] == fires
    if activation != "population_boom":  # a clock, not a condition: it fires then
        table.run_to(30)
        assert next(f["generation"] for f in table.state.frames if f["events"]) == fires


def test_create_refuses_bad_answers_with_the_seeds_message() -> None:
    table = Table()
    long = {**ANSWERS, "world": "x" * 141}
    refusal = table.call("ecosystem.create", {"answers": long})
    assert refusal == Refusal(ops.EcosystemCode.INVALID_ANSWERS,
                              "Invalid setup answers: world must be at most 140 characters",
                              {"path": "world"})
    padded = {**ANSWERS, "world": "   " + "x" * 140 + "   "}  # trimmed first, as the seed says
    blank = table.call("ecosystem.create", {"answers": {**ANSWERS, "reward": "   "}})
    assert blank.message == "Invalid setup answers: reward must be nonempty after trimming"
    with pytest.raises(ProtocolError, match=r"^args\.answers\.world: at most 1024 characters$"):
        table.call("ecosystem.create", {"answers": {**ANSWERS, "world": "x" * 1025}})
    with pytest.raises(ProtocolError, match=r"^args\.answers\.extra: unknown key$"):
        table.call("ecosystem.create", {"answers": {**ANSWERS, "extra": "x"}})
    assert table.stored == [] and table.state.setup is None
    assert table.call("ecosystem.create", {"answers": padded, "size": 16})["generation"] == 0


def test_a_run_to_180_with_two_patches_and_a_scheduled_change() -> None:
    table = created()
    assert table.call("ecosystem.control", {"action": "play", "speed": 30}) == {
        "playing": True, "speed": 30, "generation": 0, "ended": False}
    table.run_to(20)
    first = table.call("ecosystem.patch", {"patch": self_patch("A", "cooperative"),
                                           "expected_graph_version": 1})
    assert first == {"decision": 0, "generation": 20, "graph_version": 1,
                     "from_generation": 21}
    table.run_to(40)
    assert table.state.graph["version"] == 2
    change = {"generation": 45, "activation": "after_6", "duration": "short",
              "transition": "ramp", "patch": {"kind": "environment", "field": "pressure",
                                              "value": "toxin_wave"}}
    assert table.call("ecosystem.schedule", {"change": change}) == {
        "decision": 1, "generation": 40, "graph_version": 2, "from_generation": 51}
    table.run_to(60)
    assert table.state.graph["version"] == 4  # applied at 51, reverted at 57
    stale = table.call("ecosystem.patch", {"patch": self_patch("C", "cooperative"),
                                           "expected_graph_version": 2})
    assert stale.code == ops.EcosystemCode.STALE_GRAPH_VERSION
    assert stale.message == "the graph is at version 4, not 2"
    second = table.call("ecosystem.patch", {"patch": self_patch("C", "cooperative"),
                                            "expected_graph_version": 4})
    assert second["decision"] == 2
    table.run_to(180)
    frames = [e["frame"] for e in table.stored if e["type"] == "generation"]
    assert [f["generation"] for f in frames] == list(range(181))
    outcomes = [(e["generation"], e["decision"], e["outcome"]) for f in frames
                for e in f["events"] if "decision" in e]
    assert outcomes == [(21, 0, "applied"), (51, 1, "applied"), (57, 1, "reverted"),
                        (61, 2, "applied")]
    assert table.state.graph["version"] == 5
    assert table.stored[-1]["type"] == "end" and not table.state.playing
    end = table.stored[-1]
    weights = table.state.setup.config["fitness"]
    parts = end["breakdown"]["components"]
    assert {k: p["weight"] for k, p in parts.items()} == weights
    assert end["breakdown"]["total"] == frames[-1]["score"]["total"]
    assert sum(p["points"] for p in parts.values()) == pytest.approx(
        end["breakdown"]["total"], abs=1e-5)
    facts = end["reflection"]
    assert facts["source"] == "engine" and facts["generations"] == 180
    assert [d["via"] for d in facts["decisions"]] == ["patch", "schedule", "patch"]
    assert [o["outcome"] for o in facts["decisions"][1]["outcomes"]] == ["applied", "reverted"]
    assert all("swing" in d for d in facts["decisions"])
    assert {p["species"] for p in facts["peaks"]} == {"A", "B", "C"}
    for peak in facts["peaks"]:
        assert peak["biomass"] == max(f["biomass"][peak["species"]] for f in frames)
    # Ended: nothing advances, every write is refused.
    assert advance(table.state) == []
    for op, args in (("ecosystem.control", {"action": "play"}),
                     ("ecosystem.patch", {"patch": self_patch("A", "neutral"),
                                          "expected_graph_version": 5})):
        assert table.call(op, args).code == ops.EcosystemCode.RUN_ENDED
    history = table.call("ecosystem.history", {"generation": 50})
    assert history["frames"] == [frames[50]]
    assert history["graph"]["version"] == frames[50]["graphVersion"] == 2
    toxic = table.call("ecosystem.history", {"generation": 52})["graph"]
    assert (toxic["version"], toxic["environment"]["pressure"]) == (3, "toxin_wave")
    density = history["density"]
    assert (density["generation"], density["side"], set(density["species"])) == (
        50, 16, {"A", "B", "C"})
    everything = table.call("ecosystem.history", {"generation": 0, "count": 181})["frames"]
    assert everything == frames and table.call(
        "ecosystem.history", {"generation": 170, "count": 181})["frames"] == frames[170:]
    assert table.call("ecosystem.history", {"generation": 0})["graph"]["version"] == 1


def test_a_stale_or_colliding_patch_is_refused_and_changes_nothing() -> None:
    table = created()
    table.run_to(3)
    before, rev = list(table.stored), table.state.rev
    stale = table.call("ecosystem.patch", {"patch": self_patch("A", "cooperative"),
                                           "expected_graph_version": 2})
    assert stale == Refusal(ops.EcosystemCode.STALE_GRAPH_VERSION,
                            "the graph is at version 1, not 2",
                            {"graph_version": 1, "expected_graph_version": 2})
    assert (table.stored, table.state.rev) == (before, rev)
    table.call("ecosystem.patch", {"patch": self_patch("A", "cooperative"),
                                   "expected_graph_version": 1})
    second = table.call("ecosystem.patch", {"patch": self_patch("B", "cooperative"),
                                            "expected_graph_version": 1})
    assert second.code == ops.EcosystemCode.STALE_GRAPH_VERSION
    assert second.detail["pending_patch"] == 0
    broken = table.call("ecosystem.schedule", {"change": {
        "generation": 3, "activation": "immediate", "duration": "short", "transition": "abrupt",
        "patch": {"kind": "pair", "pair": "A-D", "mode": "neutral"}}})
    assert broken == Refusal(ops.EcosystemCode.INVALID_PATCH,
                             "Patch pair A-D does not exist in this graph",
                             {"path": "args.change.patch.pair"})
    starving = table.call("ecosystem.schedule", {"change": {
        "generation": 3, "activation": "someday", "duration": "short", "transition": "abrupt",
        "patch": self_patch("A", "neutral")}})
    assert (starving.code, starving.detail) == (ops.EcosystemCode.INVALID_CHANGE,
                                                {"path": "args.change.activation"})
    assert starving.message.startswith("Invalid scheduled change: change.activation must be "
                                       "one of immediate, after_6")
    past = table.call("ecosystem.schedule", {"change": {
        "generation": 2, "activation": "immediate", "duration": "short", "transition": "abrupt",
        "patch": self_patch("A", "neutral")}})
    assert past.message == ("Invalid scheduled change: change.generation must not precede "
                            "the run's generation 3")
    cut = table.call("ecosystem.patch", {"patch": {"kind": "pair", "pair": "B-C",
                                                   "mode": "neutral"},
                                         "expected_graph_version": 1})
    assert (cut.code, cut.detail) == (ops.EcosystemCode.INVALID_PATCH,  # the pike would starve
                                      {"path": "args.patch"})
    mixed = table.call("ecosystem.patch", {"patch": {**self_patch("A", "neutral"),
                                                     "pair": "A-B"},
                                           "expected_graph_version": 1})
    assert (mixed.message, mixed.detail) == ("Invalid rule patch", {"path": "args.patch.pair"})
    assert len(table.state.decisions) == 1


def test_a_change_that_could_never_fire_is_refused() -> None:
    """A change whose first generation would come after the run's last, 180, is refused
    naming that generation, and nothing changes; one that may fire at 180 is accepted."""
    table = created()
    before = list(table.stored)

    def change(generation: int, activation: str) -> dict:
        return {"change": {"generation": generation, "activation": activation,
                           "duration": "short", "transition": "abrupt",
                           "patch": self_patch("A", "neutral")}}

    for generation, activation, first in ((180, "after_6", 186), (180, "after_24", 204),
                                          (175, "after_6", 181)):
        assert table.call("ecosystem.schedule", change(generation, activation)) == Refusal(
            ops.EcosystemCode.INVALID_CHANGE,
            f"Invalid scheduled change: it could first fire at generation {first}, after "
            "the run's last, 180", {"path": "args.change", "from_generation": first})
    assert table.stored == before and table.state.decisions == ()
    assert table.call("ecosystem.schedule", change(180, "immediate"))["from_generation"] == 180
    assert table.call("ecosystem.schedule", change(174, "after_6"))["from_generation"] == 180
    # Stored as `encode` writes a decision (what an older process reads back): no derived
    # field.
    assert [sorted(d) for d in table.stored[len(before):]] == [["decision", "type"]] * 2


def test_only_the_owner_controls_patches_and_schedules() -> None:
    table = created()
    rev = table.state.rev
    for op, args in (("ecosystem.control", {"action": "play"}),
                     ("ecosystem.patch", {"patch": self_patch("A", "cooperative"),
                                          "expected_graph_version": 1}),
                     ("ecosystem.schedule", {"change": {
                         "generation": 1, "activation": "immediate", "duration": "short",
                         "transition": "abrupt", "patch": self_patch("A", "cooperative")}})):
        refusal = table.call(op, args, caller=OTHER)
        assert (refusal.code, refusal.message) == (ErrorCode.FORBIDDEN,
                                                    "only the run's owner may do this")
        assert table.call(op, args, caller=OTHER, role="spectator").code == ErrorCode.FORBIDDEN
    assert table.state.rev == rev
    assert table.call("ecosystem.view", {}, caller=OTHER, role="spectator")["view"]["owner"] \
        == OWNER
    with pytest.raises(ProtocolError, match=r"^args\.speed: must be between 1 and 30$"):
        table.call("ecosystem.control", {"action": "play", "speed": 31})
    with pytest.raises(ProtocolError, match=r'^args\.action: expected one of "play", '):
        table.call("ecosystem.control", {"action": "rewind"})


def test_control_step_advances_one_generation_and_pauses() -> None:
    table = created()
    assert table.call("ecosystem.control", {"action": "pause"}) == {
        "playing": False, "speed": 10, "generation": 0, "ended": False}
    assert len(table.stored) == 2  # a pause that changes nothing stores nothing
    table.call("ecosystem.control", {"action": "play", "speed": 5})
    assert table.call("ecosystem.control", {"action": "step"}) == {
        "playing": False, "speed": 5, "generation": 1, "ended": False}
    assert [e["type"] for e in table.stored[2:]] == ["control", "control", "generation"]
    view = table.call("ecosystem.view", {})["view"]
    assert (view["generation"], view["graph_version"], view["frame"]["generation"]) == (1, 1, 1)
    assert view["setup"]["source"] == "deterministic_fallback"
    refusal = table.call("ecosystem.history", {"generation": 2})
    assert (refusal.code, refusal.detail) == (ops.EcosystemCode.NOT_REACHED, {"generation": 1})


def test_the_stored_events_replay_to_the_same_frames_without_a_model(tmp_path: Path,
                                                                      capsys) -> None:
    table = created(seed=5)
    table.run_to(10)
    table.call("ecosystem.patch", {"patch": self_patch("B", "cooperative"),
                                   "expected_graph_version": 1})
    table.call("ecosystem.schedule", {"change": {
        "generation": 12, "activation": "population_boom", "duration": "medium",
        "transition": "pulse", "patch": self_patch("C", "cooperative")}})
    table.run_to(180)
    digests = [e["frame"]["digest"] for e in table.stored if e["type"] == "generation"]
    # Fold the decoded events (no engine rides on them): every frame is simulated again.
    again = WORLD.initial("ecosystem:pond")
    refolded = []
    for data in table.stored:
        event = WORLD.codec.decode(data)
        assert decode(data) == event and "engine" not in data
        again = WORLD.evolve(again, event)
        if data["type"] == "generation":
            refolded.append(again.engine.frame["digest"])
    assert refolded == digests and again.frames == table.state.frames
    assert again.decisions == table.state.decisions and again.ended == table.state.ended
    # The export: JSON lines of the stored events, replayed through the record.
    text = export_lines([WORLD.codec.decode(d) for d in table.stored])
    assert [json.loads(line) for line in text.splitlines()] == table.stored
    record = record_of_export(parse_export(text))
    assert record["digests"] == digests and len(record["decisions"]) == 2
    assert replay(record).ok
    path = tmp_path / "run.jsonl"
    path.write_text(text)
    assert main(["ecosystem", "replay", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "digests": 181}
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if '"generation":77,' in line)
    lines[k] = re.sub(r'"digest":"[0-9a-f]+"', '"digest":"' + "0" * 32 + '"', lines[k])
    path.write_text("\n".join(lines) + "\n")
    assert main(["ecosystem", "replay", str(path)]) == 2
    assert capsys.readouterr().err.startswith("digest differs at generation 77:")
    path.write_text(lines[0] + "\n{not json\n")
    assert main(["ecosystem", "replay", str(path)]) == 1
    assert capsys.readouterr().err == "Invalid run export: line 2 is not a stored run event\n"
    path.write_text("\n".join(lines[1:]) + "\n")  # JSON lines without the setup
    assert main(["ecosystem", "replay", str(path)]) == 1
    assert capsys.readouterr().err == "Invalid run export: line 1 must be the setup event\n"
    with pytest.raises(EcosystemError, match=r"^Invalid run export: line 1 must be the setup "
                                             r"event$"):
        parse_export(lines[1] + "\n")


def test_setup_events_from_a_model_interpretation() -> None:
    expected = deterministic_setup(ANSWERS)
    model = Interpretation("accepted", ANSWERS, "model", expected["config"], expected["graph"],
                           {"organisms": []}, None, None, 6)
    events = setup_events(ANSWERS, model, OWNER, 3, 16)
    assert events[0].source == "model" and events[0].calls == 6
    failed = Interpretation("fallback", ANSWERS, "deterministic_fallback", expected["config"],
                            expected["graph"], None,
                            {"stage": "council", "code": "nonmaximal_choice", "conflicts": []},
                            None, 7)
    assert setup_events(ANSWERS, failed, OWNER, 3, 16)[0].failure["code"] == "nonmaximal_choice"
    blocked = Interpretation("blocked", ANSWERS, None, None, None, None,
                             {"stage": "fidelity", "code": "not_approved", "conflicts": []},
                             "B-C", 8)
    refusal = setup_events(ANSWERS, blocked, OWNER, 3, 16)
    assert refusal.code == ops.EcosystemCode.SETUP_BLOCKED
    assert refusal.detail["review_focus"] == "B-C"


def test_every_args_field_is_bounded_and_limits_agree_with_the_engine() -> None:
    assert ops.MAX_SEED == 2**53 - 1 < engine.MAX_SEED and ops.MAX_GENERATION == 180
    seen: set[type] = set()

    def walk(cls: type) -> None:
        seen.add(cls)
        for field in attrs.fields(cls):
            tp = field.type
            nested = next((t for t in (ops.Answers, ops.RulePatch, ops.Change)
                           if t.__name__ in str(tp)), None)
            if nested is not None:
                if nested not in seen:
                    walk(nested)
            elif "Literal" not in str(tp):
                assert "petridish.bounds" in field.metadata, (cls.__name__, field.name)

    for spec in ops.OPS:
        walk(spec.args)
    assert {ops.Answers, ops.RulePatch, ops.Change} <= seen


def test_domain_modules_are_pure() -> None:
    """No trio, no server, no clock and no unseeded generator in the world package (but its
    effect actor, `actor.py`, which runs on trio)."""
    package = Path(__file__).resolve().parents[2] / "actors" / "ecosystem"
    banned = re.compile(r"^\s*(import|from)\s+(trio|server|time|threading)\b|datetime\.now"
                        r"|default_rng\(\s*\)|\btime\.\w+\(", re.MULTILINE)
    for path in sorted(p for p in package.glob("*.py") if p.name != "actor.py"):
        assert not banned.search(path.read_text()), (path.name, banned.search(path.read_text()))
    assert banned.search("import time\n") and banned.search("x = time.monotonic()")


def test_a_stream_the_engine_no_longer_reproduces_is_refused() -> None:
    """A restart refolds by simulating again; a stored digest it does not reproduce stops
    the load rather than letting the run go on from a different state."""
    table = created(seed=3)
    table.run_to(4)
    stored = [dict(e) for e in table.stored]
    again = WORLD.initial("ecosystem:pond")
    for data in stored[:4]:
        again = WORLD.evolve(again, WORLD.codec.decode(data))
    assert again.generation == 2
    tampered = {**stored[4], "frame": {**stored[4]["frame"], "digest": "0" * 32}}
    with pytest.raises(EcosystemError, match=r"^Invalid run record: generation 3 simulates to "
                                             r"digest [0-9a-f]{32}, the stream holds 0{32}$"):
        WORLD.evolve(again, WORLD.codec.decode(tampered))
    # The coarse pictures of history are those of the live run, generation by generation.
    assert [d.as_json() for d in again.densities] == [
        d.as_json() for d in table.state.densities[:3]]
