"""The write guard on the write path: what a write that breaks a rule of memories.guard becomes.

Every service that stores a key and value asks `guard_decide` first. With the guard off
(MEMORYHUB_WRITE_GUARD) or a clean text, the answer costs the scan alone (no query); only a text
that breaks a rule reads the account's policy, whose guard mode says what follows:

- allow: the write is stored unmarked;
- flag (the default): it is stored with the rules it broke in `MemoryEntry.guard_flags`, shown in
  the API and the dashboard and left out of the context block unless the policy includes flagged
  entries;
- hold: nothing is stored; a HeldWrite waits for staff to approve or reject it (memories.services.held),
  and the caller answers that the write is held (WriteHeld).
"""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from memories.guard import guard_scan_entry
from memories.models import PROBE_USERNAME, GuardMode, HeldWrite
from memories.selectors import account_policy


@dataclass(frozen=True)
class GuardDecision:
    """What the guard made of one write: the flags to store on the entry, or that the write is to be held."""

    matched: tuple[str, ...] = ()
    flags: str = ""
    hold: bool = False


CLEAN = GuardDecision()


@dataclass(frozen=True)
class HeldExpiry:
    """The expiry a held write asked for, kept until staff decide (all empty: the write left the expiry as it is).

    On approval a ttl counts from the approval, as from any write that is stored: the entry lives as long
    as the writer asked, the time it waited for review not taken from it. An expires time stays the
    moment the writer named; one that has passed by then cannot be approved (InvalidField), only rejected.
    """

    ttl: int | None = None
    expires: datetime | None = None
    clears: bool = False


KEEPS_EXPIRY = HeldExpiry()


class WriteHeld(Exception):
    """The write broke a guard rule and the account holds such writes: it waits for review as `held`."""

    def __init__(self, held: HeldWrite) -> None:
        super().__init__(f"the write to {held.uid}/{held.key} is held for review ({held.guard_flags})")
        self.held = held


def guard_decide(*, owner: User, uid: str, key: str, value: str, mode: str | None = None) -> GuardDecision:
    """Scan uid, key and value; for a text that breaks a rule, apply the account's guard mode (or `mode`, when the
    caller read it already). The evaluation's probe account is never guarded (its data is the hub's own)."""
    if not settings.MEMORYHUB_WRITE_GUARD or owner.get_username() == PROBE_USERNAME:
        return CLEAN
    matched = guard_scan_entry(uid=uid, key=key, value=value)
    if not matched:
        return CLEAN
    if mode is None:
        mode = account_policy(account=owner).guard_mode
    if mode == GuardMode.ALLOW:
        return GuardDecision(matched=matched)
    return GuardDecision(matched=matched, flags=",".join(matched), hold=mode == GuardMode.HOLD)


def held_write_new(
    *,
    owner: User,
    uid: str,
    key: str,
    value: str,
    kind: str | None,
    meta: dict | None,
    actor: User | None,
    decision: GuardDecision,
    privacy: str | None = None,
    expiry: HeldExpiry = KEEPS_EXPIRY,
    expected_version: int | None = None,
) -> HeldWrite:
    """A pending HeldWrite for this write, unsaved (the caller saves it, or bulk-creates many). expected_version
    is the one the write named, if any: its approval then applies it only while the entry is still at it."""
    return HeldWrite(
        expected_version=expected_version,
        ttl=expiry.ttl,
        expires=expiry.expires,
        clears_expiry=expiry.clears,
        owner=owner,
        uid=uid,
        key=key,
        value=value,
        kind=kind,
        meta=meta,
        privacy=privacy,
        guard_flags=",".join(decision.matched),
        requested_by_id=actor.pk if actor is not None else owner.pk,
        requested_at=timezone.now(),
    )
