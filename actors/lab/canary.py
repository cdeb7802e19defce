"""The seed's rules that keep a judge's render report from amounting to public promotion,
and the matching rule for votes, as pure functions over the lab's state.

1. A report is accepted only for an id the lab dealt to that exact client key within ten
   minutes; a blind post naming an arbitrary id does nothing (`not_dealt`).
2. A positive report sets `render_ok`; a negative one is an in-memory strike and nothing
   more.
3. Strikes from two distinct client keys bench the organism: it stops being dealt as a
   canary, and takes no more strikes. It is not dead, and the owner's arena can still
   prove it.
   A client is not dealt again a canary it struck (`not_canaries_for`).
4. A report on an organism already proven, or no longer alive, is accepted and changes
   nothing.

A vote is accepted only on a pair dealt to the voter (a canary's vote from the client it
was dealt to, before or after its render report), once per pair, within the window.
"""

from __future__ import annotations

from actors.lab.events import Benched, Proven, Struck
from actors.lab.state import CANARY_WINDOW_MS, Deal, Lab
from actors.world import Caller, Refusal
from protocol.errors import ErrorCode
from protocol.ops.lab import LabCode

STRIKES_TO_BENCH = 2  # distinct client keys


def was_dealt(state: Lab, client: str, oid: str, t: int) -> bool:
    """True when `oid` was dealt to exactly `client` within the window before `t`."""
    at = state.dealt.get((client, oid))
    return at is not None and 0 <= t - at <= CANARY_WINDOW_MS


def report(state: Lab, client: str, oid: str, drew: bool, t: int
           ) -> list[Proven | Struck | Benched] | Refusal:
    """The events of one render report (empty: accepted, nothing changes)."""
    if not was_dealt(state, client, oid, t):
        return Refusal(LabCode.NOT_DEALT, "that organism was not dealt to this client key "
                       "in the last ten minutes", {"id": oid})
    organism = state.organisms[oid]
    if organism.render_ok or not organism.live:
        return []
    if drew:
        return [Proven(oid, "public", client, t)]
    if oid in state.benched:  # a further strike would only grow its set of strikers
        return []
    strikers = state.strikes.get(oid, frozenset()) | {client}
    if len(strikers) >= STRIKES_TO_BENCH:
        return [Struck(oid, client), Benched(oid)]
    return [Struck(oid, client)]


def not_canaries_for(state: Lab, client: str) -> frozenset[str]:
    """What may not be dealt to `client` as a canary: the benched, and those it struck
    (its browser could not draw them; dealt again, it would only strike them again)."""
    return state.benched | {oid for oid, keys in state.strikes.items() if client in keys}


def owner_client(caller: Caller) -> str:
    """The client a pair dealt to the owner's arena is recorded under."""
    return f"owner:{caller.name}"


def voted_deal(state: Lab, pair: str, winner: str, client: str, caller: Caller, t: int
               ) -> Deal | Refusal:
    """The dealt pair a vote is on, or why the vote is refused."""
    deal = state.deals.get(pair)
    if deal is not None and deal.surface == "owner":
        if caller.role != "owner":
            return Refusal(ErrorCode.FORBIDDEN, "only the owner votes on the arena's pairs")
        client = owner_client(caller)
    if deal is None or deal.client != client or not 0 <= t - deal.t <= CANARY_WINDOW_MS:
        return Refusal(LabCode.NOT_DEALT, "that pair was not dealt to this client key in the "
                       "last ten minutes, or it has had its vote", {"pair": pair})
    if winner not in (deal.left, deal.right):
        return Refusal(LabCode.NOT_IN_PAIR, "the winner is not one of the pair's two organisms",
                       {"pair": pair, "winner": winner})
    return deal
