"""The review queue: staff approve or reject the writes the guard held (memories.services.guarding)."""

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memories.models import HeldWrite
from memories.services.entries import KEEP, Expires, PutResult, entry_put
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
    Raises HeldWrite.DoesNotExist, HeldWriteDecided, NotStaff, or InvalidField when the write breaks a
    limit changed since, or its expires time has passed (it can only be rejected then).
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
        )
        held.status = HeldWrite.Status.APPROVED
        held.decided_by = decider
        held.decided_at = timezone.now()
        held.entry_version = result.entry.version
        held.save(update_fields=["status", "decided_by", "decided_at", "entry_version"])
    return result


def held_write_reject(*, held_id: int, decider: User) -> HeldWrite:
    """Reject a pending held write: nothing is stored; the HeldWrite stays, rejected, with who decided and when."""
    with transaction.atomic():
        held = _pending_locked(held_id, decider)
        held.status = HeldWrite.Status.REJECTED
        held.decided_by = decider
        held.decided_at = timezone.now()
        held.save(update_fields=["status", "decided_by", "decided_at"])
    return held
