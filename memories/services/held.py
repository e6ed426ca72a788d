"""The review queue: staff approve or reject the writes the guard held (memories.services.guarding)."""

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Subquery
from django.utils import timezone

from memories.models import HeldWrite, MemoryEvent
from memories.services.entries import KEEP, Expires, PutResult, entry_put, entry_state_locked, last_version
from memories.services.guarding import CLEAN


class HeldWriteDecided(Exception):
    """The held write was approved or rejected already: a decision is made once."""


class NotStaff(PermissionError):
    """Only staff decide on held writes."""


def _pending_locked(held_id: int, decider: User) -> HeldWrite:
    if not decider.is_staff:
        raise NotStaff(f"{decider.get_username()} is not staff")
    held = HeldWrite.objects.select_for_update().select_related("owner").get(pk=held_id)
    if held.status != HeldWrite.Status.PENDING:
        raise HeldWriteDecided(f"held write {held_id} was {held.status} already")
    return held


def _held_expires(held: HeldWrite) -> Expires:
    """The expires argument of the put an approval makes (its ttl goes as ttl)."""
    if held.expires is not None:
        return held.expires
    return None if held.clears_expiry else KEEP


def held_write_approve(*, held_id: int, decider: User) -> PutResult:
    """Apply a pending held write as the put it was, made by `decider` (the history says so); returns the put's result.

    The approved entry is stored unmarked: staff have read it. The HeldWrite stays, approved, with who
    decided, when, and the entry version the write became. The expiry the write asked for is applied
    (memories.services.guarding.HeldExpiry): a ttl counts from now, an expires time is the one named.
    A write that named a version (If-Match, or create-only) is applied only while the entry is still
    at it: VersionConflict when it changed since (it can only be rejected then), so no approval
    overwrites a change its writer had not seen. Raises HeldWrite.DoesNotExist, HeldWriteDecided,
    NotStaff, or InvalidField when the write breaks a limit changed since, or its expires time has
    passed (it can only be rejected then).
    """
    with transaction.atomic():
        held = _pending_locked(held_id, decider)
        result = entry_put(
            owner=held.owner,
            uid=held.uid,
            key=held.key,
            value=held.value,
            kind=held.kind,
            meta=held.meta,
            privacy=held.privacy,
            actor=decider,
            guard_decision=CLEAN,
            ttl=held.ttl,
            expires=_held_expires(held),
            expected_version=held.expected_version,
        )
        if result.changed:
            # The history's create or update of this approval (the newest event of the key) names the held write.
            newest = MemoryEvent.objects.filter(owner=held.owner, uid=held.uid, key=held.key).order_by("-id")
            MemoryEvent.objects.filter(pk=Subquery(newest.values("pk")[:1])).update(held_write=held)
        held.status = HeldWrite.Status.APPROVED
        held.decided_by = decider
        held.decided_at = timezone.now()
        held.entry_version = result.entry.version
        held.save(update_fields=["status", "decided_by", "decided_at", "entry_version"])
    return result


def held_write_reject(*, held_id: int, decider: User) -> HeldWrite:
    """Reject a pending held write: nothing is stored; the HeldWrite stays, rejected, with who decided and when.

    The key's history records the rejection as a `reject` event by `decider`, naming the held write:
    before and after are the entry as it stands (none when there is no entry), at its version (or the
    key's last one), since a rejection changes nothing. Raises HeldWrite.DoesNotExist, HeldWriteDecided
    or NotStaff.
    """
    with transaction.atomic():
        held = _pending_locked(held_id, decider)
        now = timezone.now()
        entry = entry_state_locked(owner=held.owner, uid=held.uid, key=held.key, now=now)
        MemoryEvent.objects.create(
            owner=held.owner,
            uid=held.uid,
            key=held.key,
            action=MemoryEvent.Action.REJECT,
            version=entry.version if entry is not None else last_version(owner=held.owner, uid=held.uid, key=held.key),
            **{
                f"{field}_{side}": getattr(entry, field) if entry is not None else None
                for field in ("value", "kind", "meta", "privacy")
                for side in ("before", "after")
            },
            actor=decider,
            held_write=held,
            at=now,
        )
        held.status = HeldWrite.Status.REJECTED
        held.decided_by = decider
        held.decided_at = now
        held.save(update_fields=["status", "decided_by", "decided_at"])
    return held
