"""Batches: up to BATCH_MAX_OPERATIONS puts and deletes on one user's entries, all or none."""

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import User
from django.db import models, transaction
from django.utils import timezone

from memories.models import GuardMode, HeldWrite, MemoryEntry
from memories.selectors import account_policy
from memories.services.entries import (
    ABSENT_VERSION,
    KEEP,
    VersionConflict,
    entry_delete,
    entry_put,
    entry_state_locked,
    held_expiry,
    held_privacy,
)
from memories.services.guarding import CLEAN, GuardDecision, guard_decide, held_write_new
from memories.services.locks import entries_lock, users_lock
from memories.validation import (
    InvalidField,
    check_key,
    check_kind,
    check_meta,
    check_privacy,
    check_uid,
    check_value,
    expiry_from,
)

BATCH_MAX_OPERATIONS = 500


class BatchOp(models.TextChoices):
    PUT = "put", "put"
    DELETE = "delete", "delete"


@dataclass(frozen=True)
class BatchOperation:
    """One put or delete in a batch; value is required for a put. ttl or expires as entry_put takes them."""

    op: str
    key: str
    value: str | None = None
    kind: str | None = None
    meta: dict | None = None
    privacy: str | None = None
    expected_version: int | None = None
    ttl: object = None
    expires: object = KEEP


@dataclass(frozen=True)
class BatchOutcome:
    """What one operation did: status is created, updated, unchanged, deleted, absent or held.

    A held put (the account holds writes that break a guard rule) stored nothing but `held`.
    """

    op: str
    key: str
    status: str
    entry: MemoryEntry | None
    held: HeldWrite | None = None


class BatchRejected(Exception):
    """At least one operation of a batch failed, so none was applied.

    errors maps the index of each failed operation to {field: [message, ...]}, the shape DRF
    gives a list of serializers.
    """

    def __init__(self, errors: dict[int, dict[str, list[str]]]) -> None:
        super().__init__(f"{len(errors)} operations failed; none was applied")
        self.errors = errors


# The smallest version an operation's expected_version may name (ABSENT_VERSION, create-only, is not one).
BATCH_MIN_EXPECTED_VERSION = 1

# The batch's rules on an operation, each in this one place: the API's BatchOperationSerializer calls
# them for its 400 (so their messages are the API's), and entries_batch calls them for every caller.


def check_batch_op(op: object) -> str:
    """The operation's op: one of BatchOp; raises InvalidField."""
    if not isinstance(op, str) or op not in BatchOp.values:
        raise InvalidField("op", f'"{op}" is not a valid choice.')
    return op


def check_expected_version(expected_version: object) -> int | None:
    """An operation's expected_version: None (no condition), or a whole number from BATCH_MIN_EXPECTED_VERSION."""
    if expected_version is None:
        return None
    if isinstance(expected_version, bool) or not isinstance(expected_version, int):
        raise InvalidField("expected_version", "A valid integer is required.")
    if expected_version < BATCH_MIN_EXPECTED_VERSION:
        raise InvalidField(
            "expected_version", f"Ensure this value is greater than or equal to {BATCH_MIN_EXPECTED_VERSION}."
        )
    return expected_version


def check_put_has_value(op: str, value: object) -> None:
    """A put carries a value (a delete needs none); raises InvalidField."""
    if op == BatchOp.PUT and value is None:
        raise InvalidField("value", "This field is required for a put.")


def _check_expiry(operation: BatchOperation) -> None:
    expires = None if operation.expires is KEEP else operation.expires
    expiry_from(expires=expires, ttl=operation.ttl, now=timezone.now())


def _batch_operation_errors(operation: BatchOperation) -> dict[str, list[str]]:
    """Every rule an operation breaks, by field, as the API's serializer names them."""
    errors: dict[str, list[str]] = {}
    checks: list[tuple[Callable[[Any], object], object]] = [
        (check_key, operation.key),
        (check_batch_op, operation.op),
        (check_expected_version, operation.expected_version),
    ]
    if operation.op == BatchOp.PUT:
        if operation.value is not None:
            checks.append((check_value, operation.value))
        if operation.kind is not None:
            checks.append((check_kind, operation.kind))
        if operation.meta is not None:
            checks.append((check_meta, operation.meta))
        if operation.privacy is not None:
            checks.append((check_privacy, operation.privacy))
    if operation.op == BatchOp.PUT:
        checks.append((_check_expiry, operation))
    for check, field_value in checks:
        try:
            check(field_value)
        except InvalidField as error:
            errors.setdefault(error.field, []).append(error.message)
    if not errors:
        try:
            check_put_has_value(operation.op, operation.value)
        except InvalidField as error:
            errors[error.field] = [error.message]
    return errors


def _batch_guard(*, owner: User, uid: str, operations: list[BatchOperation]) -> list[GuardDecision]:
    """The guard's decision for each operation (CLEAN for deletes), the account's policy read at most once."""
    mode: str | None = None
    decisions: list[GuardDecision] = []
    for operation in operations:
        if operation.op != BatchOp.PUT or operation.value is None:
            decisions.append(CLEAN)
            continue
        decision = guard_decide(
            owner=owner, uid=uid, key=operation.key, value=operation.value, mode=mode or GuardMode.FLAG
        )
        if decision.matched and mode is None:
            # The first operation that broke a rule: now the policy matters, so read it once.
            mode = account_policy(account=owner).guard_mode
            decision = guard_decide(owner=owner, uid=uid, key=operation.key, value=operation.value, mode=mode)
        decisions.append(decision)
    return decisions


def _check_held_version(*, owner: User, uid: str, operation: BatchOperation) -> bool:
    """Whether the entry exists; VersionConflict when the operation names an expected_version the entry is not at
    (call it in the batch's transaction: the entry stays locked until the held write is saved)."""
    entry = entry_state_locked(owner=owner, uid=uid, key=operation.key, now=timezone.now())
    current = entry.version if entry is not None else ABSENT_VERSION
    if operation.expected_version is not None and current != operation.expected_version:
        raise VersionConflict(current)
    return entry is not None


def _batch_apply(
    *, owner: User, uid: str, operation: BatchOperation, decision: GuardDecision, actor: User | None
) -> BatchOutcome:
    """Apply one operation of a batch, in the batch's transaction: VersionConflict, before anything is written, when
    it names an expected_version the entry is not at."""
    if operation.op == BatchOp.PUT and decision.hold:
        assert operation.value is not None
        # As entry_put: a write on a version the entry is no longer at is refused, not held.
        exists = _check_held_version(owner=owner, uid=uid, operation=operation)
        held = held_write_new(
            owner=owner,
            uid=uid,
            key=operation.key,
            value=operation.value,
            kind=operation.kind,
            meta=operation.meta,
            privacy=held_privacy(owner=owner, privacy=operation.privacy, exists=exists),
            actor=actor,
            decision=decision,
            expiry=held_expiry(ttl=operation.ttl, expires=operation.expires),
            expected_version=operation.expected_version,
        )
        held.save()
        return BatchOutcome(op=operation.op, key=operation.key, status="held", entry=None, held=held)
    if operation.op == BatchOp.PUT:
        assert operation.value is not None  # _batch_operation_errors refused a put without one
        result = entry_put(
            owner=owner,
            uid=uid,
            key=operation.key,
            value=operation.value,
            kind=operation.kind,
            meta=operation.meta,
            privacy=operation.privacy,
            ttl=operation.ttl,
            expires=operation.expires,
            actor=actor,
            expected_version=operation.expected_version,
            guard_decision=decision,
        )
        status = "created" if result.created else "updated" if result.changed else "unchanged"
        return BatchOutcome(op=operation.op, key=operation.key, status=status, entry=result.entry)
    deleted = entry_delete(
        owner=owner, uid=uid, key=operation.key, actor=actor, expected_version=operation.expected_version
    )
    return BatchOutcome(
        op=operation.op, key=operation.key, status="deleted" if deleted is not None else "absent", entry=None
    )


def entries_batch(
    *,
    owner: User,
    uid: str,
    operations: list[BatchOperation],
    actor: User | None = None,
) -> list[BatchOutcome]:
    """Apply up to BATCH_MAX_OPERATIONS puts and deletes to one user's entries, all or none.

    Operations run in order, in one transaction, each exactly as entry_put or entry_delete would
    (history included); a delete of a missing entry is "absent", not an error; a put the write guard
    holds is "held" (a HeldWrite, kept or dropped with the rest of the batch). Any invalid
    operation raises BatchRejected with per-operation errors, and nothing is written; so does any version
    conflict, naming each operation whose expected_version is not the version the operations before it
    leave, a refused one taken as applied (so what is named is right once the operations before it are
    fixed). Raises InvalidField for a bad uid or a batch of the wrong size.

    Batches (and imports) of one user take turns: each takes the user's lock, then locks the entries it
    names in one order, before applying anything (memories.services.locks), so two batches naming keys in
    other orders, or a batch and a forget of its user, never deadlock on PostgreSQL.
    """
    check_uid(uid)
    if not 1 <= len(operations) <= BATCH_MAX_OPERATIONS:
        raise InvalidField("operations", f"must hold 1 to {BATCH_MAX_OPERATIONS} operations; got {len(operations)}.")
    errors = {
        index: operation_errors
        for index, operation in enumerate(operations)
        if (operation_errors := _batch_operation_errors(operation))
    }
    if errors:
        raise BatchRejected(errors)
    decisions = _batch_guard(owner=owner, uid=uid, operations=operations)
    outcomes: list[BatchOutcome] = []
    stale: dict[int, dict[str, list[str]]] = {}
    with transaction.atomic():
        users_lock(owner=owner, uids=[uid])
        entries_lock(owner=owner, uid=uid, keys=[operation.key for operation in operations])
        for index, operation in enumerate(operations):
            try:
                outcomes.append(
                    _batch_apply(owner=owner, uid=uid, operation=operation, decision=decisions[index], actor=actor)
                )
            except VersionConflict as conflict:
                # Refused before it wrote anything. It is applied all the same, as if its version were right, so the
                # operations after it are judged as they will be once it is fixed: every stale one is named, and
                # no other (the batch is rolled back below).
                stale[index] = {"expected_version": [str(conflict)]}
                anyway = replace(operation, expected_version=None)
                _batch_apply(owner=owner, uid=uid, operation=anyway, decision=decisions[index], actor=actor)
        if stale:
            # Leaving the atomic block by an exception rolls back every operation already applied.
            raise BatchRejected(stale)
    return outcomes
