"""Batches: up to BATCH_MAX_OPERATIONS puts and deletes on one user's entries, all or none."""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import models, transaction

from memories.models import MemoryEntry
from memories.services.entries import VersionConflict, entry_delete, entry_put
from memories.validation import InvalidField, check_key, check_kind, check_meta, check_privacy, check_uid, check_value

BATCH_MAX_OPERATIONS = 500


class BatchOp(models.TextChoices):
    PUT = "put", "put"
    DELETE = "delete", "delete"


@dataclass(frozen=True)
class BatchOperation:
    """One put or delete in a batch; value is required for a put."""

    op: str
    key: str
    value: str | None = None
    kind: str | None = None
    meta: dict | None = None
    privacy: str | None = None
    expected_version: int | None = None


@dataclass(frozen=True)
class BatchOutcome:
    """What one operation did: status is created, updated, unchanged, deleted or absent."""

    op: str
    key: str
    status: str
    entry: MemoryEntry | None


class BatchRejected(Exception):
    """At least one operation of a batch failed, so none was applied.

    errors maps the index of each failed operation to {field: [message, ...]}, the shape DRF
    gives a list of serializers.
    """

    def __init__(self, errors: dict[int, dict[str, list[str]]]) -> None:
        super().__init__(f"{len(errors)} operations failed; none was applied")
        self.errors = errors


def _batch_operation_errors(operation: BatchOperation) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    checks: list[tuple] = [(check_key, operation.key)]
    if operation.op == BatchOp.PUT:
        checks.append((check_value, operation.value))
        if operation.kind is not None:
            checks.append((check_kind, operation.kind))
        if operation.meta is not None:
            checks.append((check_meta, operation.meta))
        if operation.privacy is not None:
            checks.append((check_privacy, operation.privacy))
    elif operation.op != BatchOp.DELETE:
        errors["op"] = [f"must be one of {', '.join(BatchOp.values)}."]
    for check, field_value in checks:
        try:
            check(field_value)
        except InvalidField as error:
            errors.setdefault(error.field, []).append(error.message)
    if operation.expected_version is not None and (
        not isinstance(operation.expected_version, int) or operation.expected_version < 1
    ):
        errors["expected_version"] = ["must be a whole number of at least 1."]
    return errors


def entries_batch(
    *,
    owner: User,
    uid: str,
    operations: list[BatchOperation],
    actor: User | None = None,
) -> list[BatchOutcome]:
    """Apply up to BATCH_MAX_OPERATIONS puts and deletes to one user's entries, all or none.

    Operations run in order, in one transaction, each exactly as entry_put or entry_delete would
    (history included); a delete of a missing entry is "absent", not an error. Any invalid
    operation or version conflict raises BatchRejected with per-operation errors, and nothing is
    written. Raises InvalidField for a bad uid or a batch of the wrong size.
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
    outcomes: list[BatchOutcome] = []
    with transaction.atomic():
        for index, operation in enumerate(operations):
            try:
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
                        actor=actor,
                        expected_version=operation.expected_version,
                    )
                    status = "created" if result.created else "updated" if result.changed else "unchanged"
                    outcomes.append(BatchOutcome(op=operation.op, key=operation.key, status=status, entry=result.entry))
                else:
                    deleted = entry_delete(
                        owner=owner,
                        uid=uid,
                        key=operation.key,
                        actor=actor,
                        expected_version=operation.expected_version,
                    )
                    status = "deleted" if deleted is not None else "absent"
                    outcomes.append(BatchOutcome(op=operation.op, key=operation.key, status=status, entry=None))
            except VersionConflict as conflict:
                # Leaving the atomic block by an exception rolls back every operation already applied.
                raise BatchRejected({index: {"expected_version": [str(conflict)]}}) from None
    return outcomes
