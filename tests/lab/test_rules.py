"""The lab world through its table: each row of the seed's surface table, the owner's
verdicts, births (every candidate through validate; a failure logged, never inserted),
crosses and directives."""

from __future__ import annotations

import json

import attrs
import pytest

from actors.lab.births import MAX_REJECTED_CODE, backlog, birth_directive, grammar_candidate
from actors.lab.contract import MAX_CHARS, MIN_CHARS
from actors.lab.directives import MAX_DIRECTIVE_CHARS, MIN_DIRECTIVE_CHARS
from actors.lab.events import Born, Rejected
from actors.lab.offers import HOUR_MS, MAX_CROSS_BACKLOG, MAX_CROSSES_PER_HOUR
from actors.lab.rules import WORLD, first_line
from actors.lab.seeding import rng_for
from actors.lab.validate_shader import glslang_path
from actors.world import Caller, Refusal
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.lab import Birth, LabCode
from tests.lab.lab_world import JUDGE, OWNER, LabRun, born
from tests.utf16 import EMOJI, edges, floor_edges

GOOD = """void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    fragColor = vec4(uv, 0.5 + 0.5 * sin(u_time), 1.0);
}
"""


def variant(i: int) -> str:
    return GOOD.replace("0.5 + 0.5", f"0.{i} + 0.5")


@pytest.fixture
def pool() -> tuple[LabRun, dict[str, list[str]]]:
    """Proven p1 p2 p3, unproven u1 u2, dead d1, and a proven panel."""
    run = LabRun()
    ids = born(run, 6)
    p, u, d = ids[:3], ids[3:5], ids[5:]
    for oid in p:
        assert run("lab.ok", id=oid).changed
    run("lab.invalid", id=d[0], log="ERROR: 0:3: 'x' : undeclared identifier\nERROR: 1 error\n")
    panel = born(run, 1, "panel")
    run("lab.ok", id=panel[0])
    return run, {"proven": p, "unproven": u, "dead": d, "panel": panel}


def deals(run: LabRun, op: str, n: int = 40, **args: object) -> list:
    replies = []
    for _ in range(n):
        reply = run(op, JUDGE if op == "lab.public_pair" else OWNER, **args)
        assert not isinstance(reply, Refusal), reply
        replies.append(reply)
    return replies


# --- the surface table ------------------------------------------------------------------


def test_owner_pairs_are_alive_without_error_and_deal_the_unproven(pool) -> None:
    run, ids = pool
    seen = set()
    for pair in deals(run, "lab.pair", track="shader"):
        assert pair.left.id in ids["unproven"]  # the unproven are dealt here, first
        assert pair.right.status == "alive" and pair.right.error is None
        seen.update((pair.left.id, pair.right.id))
    assert seen == set(ids["proven"] + ids["unproven"])
    assert run("lab.pair", track="panel").code == LabCode.NO_PAIR  # one panel only
    lonely = LabRun()
    born(lonely, 1)
    assert lonely("lab.pair", track="shader").code == LabCode.NO_PAIR


def test_breeding_parents_are_proven_when_any_is_proven(pool) -> None:
    run, ids = pool
    for _ in range(6):
        child = run("lab.birth", track="shader")
        organism = run.state.organisms[child.id]
        assert set(organism.parents) <= set(ids["proven"]) and organism.parents
        assert not organism.render_ok  # born unproven


def test_breeding_uses_the_whole_alive_pool_only_when_none_is_proven() -> None:
    run = LabRun()
    first = born(run, 3)
    run("lab.invalid", id=first[0], log="ERROR: dead")
    parents = set()
    for _ in range(8):
        child = born(run, 1)[0]
        parents.update(run.state.organisms[child].parents)
    assert first[0] not in parents and parents  # never the dead one
    alive = {o.id for o in run.state.organisms.values() if o.status == "alive"}
    assert parents <= alive


def test_public_pairs_are_proven_plus_at_most_one_canary(pool) -> None:
    run, ids = pool
    canaries = set()
    for pair in deals(run, "lab.public_pair", client_key="k1"):
        members = {pair.left.id, pair.right.id}
        assert not members & set(ids["dead"] + ids["panel"])
        unproven = members & set(ids["unproven"])
        assert len(unproven) <= 1 and (pair.canary in unproven if unproven else
                                       pair.canary is None)
        partner = pair.right if pair.left.id == pair.canary else pair.left
        assert partner.render_ok and partner.error is None
        canaries.update(unproven)
    assert canaries == set(ids["unproven"])


def test_public_pairs_without_a_backlog_are_two_proven(pool) -> None:
    run, ids = pool
    for oid in ids["unproven"]:
        run("lab.ok", id=oid)
    for pair in deals(run, "lab.public_pair", 10, client_key="k1"):
        assert pair.canary is None and pair.left.render_ok and pair.right.render_ok
    assert LabRun()("lab.public_pair", JUDGE, client_key="k").code == LabCode.NO_PAIR


def test_gallery_is_proven_without_error_judged_at_least_once_by_rating(pool) -> None:
    run, ids = pool
    assert run("lab.gallery", JUDGE).organisms == []  # proven but never judged
    pair = run("lab.public_pair", JUDGE, client_key="k1")
    run("lab.vote", JUDGE, pair=pair.pair, winner=pair.left.id, client_key="k1")
    shown = run("lab.gallery", JUDGE).organisms
    proven_shown = [o for o in shown if o.id in ids["proven"]]
    assert [o.id for o in shown] == [o.id for o in proven_shown]  # no canary, no panel
    assert all(o.judged >= 1 for o in shown)
    assert [o.ordinal for o in shown] == sorted((o.ordinal for o in shown), reverse=True)
    assert len(run("lab.gallery", JUDGE, limit=1).organisms) == min(1, len(shown))


def test_visitor_cross_needs_two_proven_parents_and_the_child_is_unproven(pool) -> None:
    run, ids = pool
    a, b = ids["proven"][:2]
    refused = run("lab.cross", OWNER, a=a, b=ids["unproven"][0], client_key="v1")
    assert refused.code == LabCode.PARENT_NOT_PROVEN
    assert run("lab.cross", OWNER, a=a, b=ids["panel"][0], client_key="v1").code == \
        LabCode.NOT_CROSSABLE
    # below the owner a parent the public may not see is unknown, as a missing one is
    nope = run("lab.cross", JUDGE, a=a, b="s-nope", client_key="v1")
    assert nope.code == LabCode.UNKNOWN_ORGANISM
    for hidden in (ids["unproven"][0], ids["dead"][0], ids["panel"][0]):
        refused = run("lab.cross", JUDGE, a=a, b=hidden, client_key="v1")
        assert refused == attrs.evolve(nope, detail={"id": hidden})
    child = run("lab.cross", JUDGE, a=a, b=b, client_key="v1")
    organism = run.state.organisms[child.id]
    assert organism.parents == (a, b) and organism.source == "cross"
    assert not organism.render_ok and organism.live
    stored = json.loads(run.stored[-1])
    assert (stored["type"], stored["client"]) == ("born", "v1")


def test_visitor_crosses_waiting_to_be_proven_are_bounded() -> None:
    run = LabRun()
    a, b = born(run, 2)
    for oid in (a, b):
        run("lab.ok", id=oid)
    children = []
    while len(children) < MAX_CROSS_BACKLOG:  # (a child the grammar made already is a no)
        reply = run("lab.cross", JUDGE, a=a, b=b, client_key=f"v{run.t}")
        children += [reply.id] if reply.status == "born" else []
        run.t += 1
    before = (run.state, len(run.stored))
    refused = run("lab.cross", JUDGE, a=a, b=b, client_key="late")
    assert (refused.code, refused.detail) == (ErrorCode.OVERLOADED, {"crosses": 16, "limit": 16})
    assert refused.message == ("16 visitors' crosses of this lab wait to be proven; try again "
                               "once the owner's arena has judged some")
    assert (run.state, len(run.stored)) == before
    run("lab.ok", id=children[0])  # one judged: room for one more
    while run("lab.cross", JUDGE, a=a, b=b, client_key=f"v{run.t}").status != "born":
        run.t += 1
    assert run("lab.cross", JUDGE, a=a, b=b, client_key="late").code == ErrorCode.OVERLOADED


def test_visitor_crosses_born_in_an_hour_are_bounded_whoever_crosses() -> None:
    """The pool keeps every child and any judge may prove a canary, so children proven
    at once would let visitors grow the pool as fast as they cross: past
    MAX_CROSSES_PER_HOUR born in the hour, a cross is refused until the oldest is an hour
    old."""
    run = LabRun()
    a, b = born(run, 2)
    for oid in (a, b):
        run("lab.ok", id=oid)
    children: list[int] = []  # when each was born
    while len(children) < MAX_CROSSES_PER_HOUR:
        reply = run("lab.cross", JUDGE, a=a, b=b, client_key=f"v{run.t}")
        if reply.status == "born":
            children.append(run.t)
            run("lab.ok", id=reply.id)  # proven at once: the backlog stays empty
        run.t += 1
    before = (run.state, len(run.stored))
    refused = run("lab.cross", JUDGE, a=a, b=b, client_key="late")
    assert refused.code == ErrorCode.OVERLOADED
    assert refused.message == ("60 visitors' crosses were born in this lab in the last "
                               "hour; try again later")
    assert refused.detail == {"crosses_last_hour": 60, "limit": 60,
                              "retry_after": (children[0] + HOUR_MS - run.t) / 1000}
    assert (run.state, len(run.stored)) == before
    run.t += HOUR_MS  # the oldest are an hour old
    while run("lab.cross", JUDGE, a=a, b=b, client_key=f"v{run.t}").status != "born":
        run.t += 1


def cross_born(run: LabRun, caller: Caller, a: str, b: str, key: str) -> Birth | Refusal:
    """A cross of `a` and `b` that bears a child (a child repeating an organism is drawn
    again), or its refusal."""
    reply = run("lab.cross", caller, a=a, b=b, client_key=key)
    while isinstance(reply, Birth) and reply.status == "rejected":
        run.t += 1
        reply = run("lab.cross", caller, a=a, b=b, client_key=key)
    return reply


def test_the_owner_s_crosses_neither_count_toward_the_visitors_caps_nor_are_refused() -> None:
    """The caps bound what visitors make the lab keep: the owner's unproven children leave
    the visitors their MAX_CROSS_BACKLOG, and the owner crosses in an hour or a backlog
    the visitors filled."""
    run = LabRun()
    a, b = born(run, 2)
    for oid in (a, b):
        run("lab.ok", id=oid)
    mine = [cross_born(run, OWNER, a, b, "o").id for _ in range(MAX_CROSS_BACKLOG)]
    assert {run.state.organisms[oid].source for oid in mine} == {"owner"}
    for _ in range(MAX_CROSS_BACKLOG):  # all unproven, with the owner's
        assert cross_born(run, JUDGE, a, b, f"v{run.t}").status == "born"
    assert cross_born(run, JUDGE, a, b, "late").detail == {"crosses": 16, "limit": 16}
    assert cross_born(run, OWNER, a, b, "o").status == "born"  # the backlog is visitors'
    for oid in list(run.state.organisms):
        run("lab.ok", id=oid)
    while isinstance(reply := cross_born(run, JUDGE, a, b, f"v{run.t}"), Birth):
        run("lab.ok", id=reply.id)  # (the backlog stays empty)
    assert reply.detail["crosses_last_hour"] == MAX_CROSSES_PER_HOUR
    assert cross_born(run, OWNER, a, b, "o").status == "born"
    assert cross_born(run, JUDGE, a, b, "late").detail == reply.detail  # not counted


def test_a_cross_of_a_model_birth_is_refused() -> None:
    run = LabRun()
    a = run("lab.birth", track="shader", code=GOOD).id
    b = born(run, 1)[0]
    for oid in (a, b):
        run("lab.ok", id=oid)
    assert run("lab.cross", JUDGE, a=a, b=b, client_key="v").code == LabCode.NOT_CROSSABLE


# --- the owner's verdicts -----------------------------------------------------------------


def test_ok_sets_render_ok_once_and_invalid_kills_with_the_first_log_line(pool) -> None:
    run, ids = pool
    u = ids["unproven"][0]
    assert run("lab.ok", id=u).changed and run.state.organisms[u].render_ok
    assert not run("lab.ok", id=u).changed  # already proven: nothing changes
    dead = run.state.organisms[ids["dead"][0]]
    assert (dead.status, dead.error) == ("dead", "ERROR: 0:3: 'x' : undeclared identifier")
    again = run("lab.invalid", id=dead.id, log="ERROR: something else")
    assert not again.changed and again.error == dead.error  # the first error is kept
    assert not run("lab.ok", id=dead.id).changed  # a dead organism is not proven
    assert run("lab.ok", id="s-nope").code == LabCode.UNKNOWN_ORGANISM


def test_owner_ops_need_the_owner_role() -> None:
    run = LabRun()
    for op, args in (("lab.ok", {"id": "x"}), ("lab.invalid", {"id": "x", "log": ""}),
                     ("lab.pair", {}), ("lab.birth", {}), ("lab.directives", {}),
                     ("lab.backlog", {})):
        assert run(op, JUDGE, **args).code == ErrorCode.FORBIDDEN
    assert {s.name for s in WORLD.ops if s.role == "spectator"} == {
        "lab.public_pair", "lab.seen", "lab.vote", "lab.gallery", "lab.cross", "lab.status",
        "lab.lineage", "lab.info"}


@pytest.mark.parametrize(("log", "line"), [
    ("\n\n  ERROR: 0:1: 'a' : syntax error  \nmore", "ERROR: 0:1: 'a' : syntax error"),
    ("", "compile or link failed with an empty info log"),
    ("x" * 900, "x" * 500),
    ("x" * 499 + EMOJI + "x", "x" * 499),  # 500 UTF-16 units, the emoji's pair left out whole
    (EMOJI * 251, EMOJI * 250),
])
def test_the_stored_error_is_the_first_line_of_the_log(log: str, line: str) -> None:
    assert first_line(log) == line


# --- births -------------------------------------------------------------------------------


def test_every_candidate_goes_through_validate_and_a_failure_is_logged_never_inserted() -> None:
    run = LabRun()
    cases = [("uniform float u_x;\n" + GOOD, "extra uniform"), ("x" * 59, "too short"),
             ("x" * (MAX_CHARS + 1), "too long"),
             ("#define HDR (int i = 0; i < 99; i++)\n" + GOOD.replace(
                 "fragColor", "float s = 0.0;\n    for HDR { s += 0.1; }\n    fragColor"),
              "loop bound over 64")]
    if glslang_path() is not None:  # the compile step is part of validate
        cases.append((GOOD.replace("vec2 uv", "float bad = 1;\n    vec2 uv"),
                      ("ERROR: stdin:8: '=' :  cannot convert from ' const int' to "
                      "' temp highp float'")))
    for code, reason in cases:
        reply = run("lab.birth", track="shader", code=code)
        assert (reply.status, reply.reason) == ("rejected", reason)
        assert run("lab.status", id=reply.id).reason == reason  # kept by its id
        assert run("lab.status", JUDGE, id=reply.id).code == LabCode.UNKNOWN_ORGANISM
        stored = json.loads(run.stored[-1])
        assert (stored["type"], stored["reason"]) == ("rejected", reason)
        # the head of the code, and the id of the whole (the one `lab.status` knows)
        assert (stored["code"], stored["id"]) == (code[:MAX_REJECTED_CODE], reply.id)
        assert not run.state.validating
    assert run.state.organisms == {} and run.state.rejected == len(cases)
    first = run("lab.birth", track="shader", code=variant(7))
    assert first.reason is None and list(run.state.organisms) == [first.id]
    dup = run("lab.birth", track="shader", code=variant(7))
    assert dup == Birth(first.id, "rejected", f"duplicate of {first.id}")
    assert len(run.state.organisms) == 1


@pytest.mark.parametrize(("code", "reason"), [
    *((code, "no main()" if fits else "too long") for code, fits in edges(MAX_CHARS)),
    *((code, "no main()" if fits else "too short") for code, fits in floor_edges(MIN_CHARS))])
def test_a_births_code_counts_utf16_code_units(code: str, reason: str) -> None:
    """The seed's 60 and 24,000 characters are JavaScript's `length` (an emoji is two): a
    code within them passes the length rule and meets the next one."""
    reply = LabRun()("lab.birth", track="shader", code=code)
    assert (reply.status, reply.reason) == ("rejected", reason)


@pytest.mark.parametrize(("text", "says"), [
    *((text, None if fits else "directive too long")
      for text, fits in edges(MAX_DIRECTIVE_CHARS)),
    *((text, None if fits else "directive too short")
      for text, fits in floor_edges(MIN_DIRECTIVE_CHARS))])
def test_a_directives_length_counts_utf16_code_units(text: str, says: str | None) -> None:
    reply = LabRun()("lab.directive_add", text=text)
    if says is None:
        assert reply.text == text
    else:
        assert (reply.code, reply.message) == (LabCode.BAD_DIRECTIVE, says)


def test_a_birth_beyond_the_op_bound_is_a_bad_request() -> None:
    with pytest.raises(ProtocolError, match=r"^args.code: at most 48000 characters$"):
        LabRun()("lab.birth", track="shader", code="x" * 48_001)


def test_a_birth_names_a_known_directive() -> None:
    run = LabRun()
    assert run("lab.birth", code=GOOD, directive="dx").code == LabCode.UNKNOWN_DIRECTIVE


def test_a_birth_cites_a_directive_of_its_own_track() -> None:
    """A panel born citing a shader directive would have its votes rate that directive."""
    run = LabRun()
    d = run("lab.directive_add", track="shader",
            text="Calm and meditative in deep teals with soft blobs")
    before = run.state
    refused = run("lab.birth", track="panel", code="<p>hi</p>", directive=d.id)
    assert (refused.code, refused.message, refused.detail) == (
        LabCode.BAD_DIRECTIVE,
        "args.directive: that directive is the shader track's, not the panel track's",
        {"path": "args.directive", "id": d.id, "track": "shader"})
    assert run.state == before


@pytest.mark.parametrize("name", ["title", "directive"])
def test_a_grammar_birth_takes_no_title_or_directive(name: str) -> None:
    """A birth without code is a grammar child: a title or directive given was dropped."""
    run = LabRun()
    d = run("lab.directive_add", track="shader",
            text="Calm and meditative in deep teals with soft blobs")
    before, stored = run.state, len(run.stored)
    refused = run("lab.birth", track="shader", **{name: "Soft" if name == "title" else d.id})
    assert (refused.code, refused.message, refused.detail) == (
        ErrorCode.BAD_REQUEST,
        f"args.{name}: a birth without code is a grammar child, which takes no {name}",
        {"path": f"args.{name}"})
    assert run.state == before and len(run.stored) == stored


def test_the_birth_loop_functions(pool) -> None:
    run, ids = pool
    organisms = list(run.state.organisms.values())
    assert backlog(organisms, "shader") == 2 and backlog(organisms, "panel") == 0
    candidate = grammar_candidate(organisms, "shader", rng_for(3, "birth"))
    assert set(candidate.parents) <= set(ids["proven"]) and candidate.genome is not None
    assert birth_directive([], "shader", rng_for(3, "birth")) is None


def test_births_are_deterministic_for_a_seed() -> None:
    def grow() -> list[str]:
        run = LabRun("lab:a")
        run("lab.create", seed=11)
        return born(run, 4)

    assert grow() == grow()


def test_create_once() -> None:
    run = LabRun("lab:other")
    assert run("lab.create", seed=5).organisms == 0 and run.state.seed == 5
    assert run("lab.create").code == ErrorCode.ALREADY_EXISTS
    assert WORLD.declared("main", 0) and not WORLD.declared("other", 0)


# --- directives --------------------------------------------------------------------------


def test_directives_are_added_mutated_explored_and_rated_through_votes() -> None:
    run = LabRun()
    d1 = run("lab.directive_add", text="Calm and meditative in deep teals with soft blobs")
    d2 = run("lab.directive_add", text="Restless and electric in acid greens, shattered shards")
    assert run("lab.directive_add", text=d1.text).code == ErrorCode.ALREADY_EXISTS
    bad = run("lab.directive_add", text="Use a uniform for the glow and no while loops")
    assert bad.code == LabCode.BAD_DIRECTIVE and "technical contract" in bad.message
    child = run("lab.directive_mutate", winner=d1.id, loser=d2.id)
    assert child.parents == [d1.id, d2.id] and child.origin == "mutate"
    assert run("lab.directive_mutate", winner=d1.id, loser="dx").code == \
        LabCode.UNKNOWN_DIRECTIVE
    assert run("lab.directive_explore", track="shader").origin == "explore"
    assert len(run("lab.directives", track="shader").directives) == 4
    a = run("lab.birth", code=variant(1), directive=d1.id).id
    b = run("lab.birth", code=variant(2), directive=d2.id).id
    pair = run("lab.pair", track="shader")
    assert {pair.left.id, pair.right.id} == {a, b}  # the only two organisms
    run("lab.vote", pair=pair.pair, winner=a)
    rated = {d.id: d for d in run("lab.directives", track="shader").directives}
    assert rated[d1.id].mu > 25 > rated[d2.id].mu


def test_directive_lineage_is_stored() -> None:
    run = LabRun()
    d1 = run("lab.directive_add", text="Calm and meditative in deep teals with soft blobs")
    d2 = run("lab.directive_add", text="Eerie and quiet in monochrome silver, thin filaments")
    child = run("lab.directive_mutate", winner=d1.id, loser=d2.id)
    assert json.loads(run.stored[-1])["directive"]["parents"] == [d1.id, d2.id]
    assert run.replay().directives[child.id].parents == (d1.id, d2.id)


def test_a_caller_without_the_owner_role_votes_on_no_owner_pair(pool) -> None:
    run, _ = pool
    pair = run("lab.pair", track="shader")
    refused = run("lab.vote", JUDGE, pair=pair.pair, winner=pair.left.id, client_key="k")
    assert refused.code == ErrorCode.FORBIDDEN
    other_owner = run("lab.vote", Caller("someone", "owner"), pair=pair.pair,
                      winner=pair.left.id)
    assert other_owner.code == LabCode.NOT_DEALT
    assert run("lab.vote", pair=pair.pair, winner=pair.left.id).winner.judged == 1


def test_births_record_events_of_their_kind() -> None:
    run = LabRun()
    run("lab.birth", code=GOOD)
    run("lab.birth", code="bad")
    kinds = [WORLD.codec.decode(json.loads(t)) for t in run.stored]
    assert [type(k) for k in kinds] == [Born, Rejected]
