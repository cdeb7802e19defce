"""Rule profiles: the semantics a level or pack plays under, as data the one engine reads.

`classic` follows the original game where the two differ; `keke` reproduces the Keke AI
competition simulator (`shared/baba-corpus/README.md`, "Semantics the solutions assume") so the
corpus's recorded solutions replay. A profile is a value, not a code fork: `turn.py` walks
`plan_for(...)` and branches on the switches below.
"""

from __future__ import annotations

import attrs

PHASES: tuple[str, ...] = (
    "beforeMovement", "afterMovement", "afterTransforms", "beforeContacts", "afterContacts",
    "settled",
)
STEPS: frozenset[str] = frozenset({"players", "automata", "rules", "contacts", "victory"})


@attrs.frozen
class Profile:
    """One rule profile (see the module docstring and docs/puzzle.md for the differences)."""

    name: str
    # The turn of a level without mechanics: engine steps and lifecycle phases in execution order.
    plan: tuple[str, ...]
    # "stacked": any number of things per cell. "layered": Keke's object layer, one thing that is
    # YOU/MOVE/PUSH/STOP or text per cell, everything else overlappable underneath.
    collision: str
    # DEFEAT and HOT remove both members of the contact pair (Keke) or only the victim (classic).
    contacts_destroy_both: bool
    # A blocked MOVE object turns round and retries in the same turn (classic) or just turns.
    move_retry: bool
    # Rules (and transforms) are re-read every rules step, or only when some text moved.
    reparse_every_turn: bool
    # Transforms apply rule by rule, re-creating each changed object at the end of the board facing
    # right (Keke: a later rule can change what an earlier one made), or all at once in place.
    transforms_in_rule_order: bool
    # The turn of a level that declares mechanics (default: `plan`). It must keep the seed's
    # contract: `afterMovement` after every movement step and, with `beforeContacts`, before
    # every contact check; `afterContacts` after them.
    mechanic_plan: tuple[str, ...] = attrs.field()

    @mechanic_plan.default
    def _same_plan(self) -> tuple[str, ...]:
        return self.plan

    def __attrs_post_init__(self) -> None:
        for plan in (self.plan, self.mechanic_plan):
            phases = [p for p in plan if p in PHASES]
            if tuple(phases) != PHASES or any(p not in STEPS for p in plan if p not in PHASES):
                raise ValueError(f"profile {self.name}: plan must hold each phase once, in order")
        plan = self.mechanic_plan
        at = plan.index
        moves = [i for i, p in enumerate(plan) if p in ("players", "automata")]
        contacts = [i for i, p in enumerate(plan) if p == "contacts"]
        if not (max(moves, default=-1) < at("afterMovement")
                and at("beforeContacts") < min(contacts, default=len(plan))
                and at("afterContacts") > max(contacts, default=-1)):
            raise ValueError(f"profile {self.name}: mechanic_plan must run afterMovement after "
                             "all movement and, with beforeContacts, before every contact check")

    def plan_for(self, has_mechanics: bool) -> tuple[str, ...]:
        """The plan a level walks: `mechanic_plan` when it declares mechanics."""
        return self.mechanic_plan if has_mechanics else self.plan


CLASSIC = Profile(
    name="classic",
    plan=("beforeMovement", "players", "rules", "automata", "afterMovement", "rules",
          "afterTransforms", "beforeContacts", "contacts", "afterContacts", "victory", "settled"),
    collision="stacked", contacts_destroy_both=False, move_retry=True, reparse_every_turn=True,
    transforms_in_rule_order=False,
)
# Keke checks contacts right after the players move and again after the MOVE objects, then re-reads
# the rules only if a word moved; contacts are not rechecked after transforms. Keke has no
# mechanics, so a keke level that declares some checks contacts once, where the seed's phase
# order puts them: after all movement, the rules and `beforeContacts`.
KEKE = Profile(
    name="keke",
    plan=("beforeMovement", "players", "contacts", "automata", "contacts", "afterMovement",
          "rules", "afterTransforms", "beforeContacts", "afterContacts", "victory", "settled"),
    collision="layered", contacts_destroy_both=True, move_retry=False, reparse_every_turn=False,
    transforms_in_rule_order=True,
    mechanic_plan=("beforeMovement", "players", "automata", "afterMovement", "rules",
                   "afterTransforms", "beforeContacts", "contacts", "afterContacts", "victory",
                   "settled"),
)
PROFILES: dict[str, Profile] = {p.name: p for p in (CLASSIC, KEKE)}


def get_profile(name: str) -> Profile:
    """The profile called `name`; raises `KeyError` naming the supported ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r} (supported: {', '.join(sorted(PROFILES))})") \
            from None
