"""The sync outbox: the only code that writes SyncTask rows.

One row per Honcho session (an entry from its creation to its deletion). A change to the entry
turns its row back to pending and bumps its revision, in one statement (INSERT ... ON CONFLICT,
the same on SQLite and PostgreSQL), so pending changes to one entry collapse into one task.

Workers claim due tasks with a lease: the candidates are read with SELECT ... FOR UPDATE SKIP
LOCKED on PostgreSQL (a plain read on SQLite, which has one writer at a time), then taken with one
conditional UPDATE that only succeeds for rows still unclaimed or whose lease ran out. A claimed
task is finished only if its revision is still the one claimed: a change made meanwhile keeps it
pending for the next pass.
"""

import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import F, Q, QuerySet

from memories.models import MemoryEntry, SyncTask

# Rows per INSERT statement (SQLite allows 32,766 parameters; 13 per row).
RECORD_CHUNK = 500
LAST_ERROR_MAX_CHARS = 2000

_COLUMNS = (
    "session_id",
    "owner_id",
    "uid",
    "key",
    "operation",
    "version",
    "status",
    "revision",
    "attempts",
    "next_attempt_at",
    "pending_since",
    "claim_token",
    "last_error",
    "updated_at",
)


def _upsert_sql(rows: int) -> str:
    return _upsert_sql_for(connection.vendor, rows)


# What a new change brings to a task that exists: the entry's identity, latest operation and version.
_TAKEN_FROM_THE_CHANGE = ("owner_id", "uid", "key", "operation", "version", "updated_at")


@functools.lru_cache(maxsize=8)
def _upsert_sql_for(vendor: str, rows: int) -> str:
    """The INSERT ... ON CONFLICT for `rows` tasks (the same text on SQLite and PostgreSQL).

    On conflict the task turns pending with the next revision and no failed attempts, due now (or
    when it was already due); its claim is kept; it stays pending since its oldest change not yet pushed.
    In SET, `table.column` is the row as it was and `excluded.column` the row this change proposes.
    """
    quote = connection.ops.quote_name
    table = quote(SyncTask._meta.db_table)
    one_row = "(" + ", ".join(["%s"] * len(_COLUMNS)) + ")"
    pending, done = SyncTask.Status.PENDING.value, SyncTask.Status.DONE.value
    assignments = [f"{quote(column)} = excluded.{quote(column)}" for column in _TAKEN_FROM_THE_CHANGE]
    assignments += [
        f"{quote('revision')} = {table}.{quote('revision')} + 1",
        f"{quote('attempts')} = 0",
        # a task already due keeps its place in the queue (and its index entries: PostgreSQL can then
        # update the row in place); one waiting out a backoff becomes due now
        f"{quote('next_attempt_at')} = CASE WHEN {table}.{quote('status')} = '{pending}' "
        f"AND {table}.{quote('next_attempt_at')} <= excluded.{quote('next_attempt_at')} "
        f"THEN {table}.{quote('next_attempt_at')} ELSE excluded.{quote('next_attempt_at')} END",
        f"{quote('pending_since')} = CASE WHEN {table}.{quote('status')} = '{done}' "
        f"THEN excluded.{quote('pending_since')} ELSE {table}.{quote('pending_since')} END",
        f"{quote('status')} = '{pending}'",
    ]
    return (
        f"INSERT INTO {table} ({', '.join(quote(column) for column in _COLUMNS)}) VALUES {', '.join([one_row] * rows)} "
        f"ON CONFLICT ({quote('session_id')}) DO UPDATE SET {', '.join(assignments)}"
    )


def tasks_record(entries: Sequence[MemoryEntry], *, operation: SyncTask.Operation, now: datetime) -> None:
    """Queue the entries' sessions for the worker: one statement per 500 entries, in the caller's transaction.

    A task already there (pending, failed or done) turns pending with a new revision; its claim, if a
    worker holds one, is kept, so no second worker pushes the same entry meanwhile.
    """
    moment = connection.ops.adapt_datetimefield_value(now)
    pending = SyncTask.Status.PENDING.value
    with connection.cursor() as cursor:
        for start in range(0, len(entries), RECORD_CHUNK):
            chunk = entries[start : start + RECORD_CHUNK]
            parameters: list = []
            for entry in chunk:
                parameters += [
                    entry.honcho_session_id,
                    entry.owner_id,
                    entry.uid,
                    entry.key,
                    operation.value,
                    entry.version,
                    pending,
                    1,
                    0,
                    moment,
                    moment,
                    "",
                    "",
                    moment,
                ]
            cursor.execute(_upsert_sql(len(chunk)), parameters)


def session_delete_record(
    *, session_id: str, owner_id: int | None, uid: str, key: str, version: int, now: datetime
) -> None:
    """Queue the deletion of a Honcho session that no entry holds (one a reconciliation found extra)."""
    # Never saved: it carries the session's fields to tasks_record; an extra session may name no account.
    orphan = MemoryEntry(
        honcho_session_id=session_id,
        owner_id=owner_id,  # type: ignore[misc]
        uid=uid,
        key=key,
        version=max(version, 1),
    )
    tasks_record([orphan], operation=SyncTask.Operation.DELETE, now=now)


@dataclass(frozen=True)
class ClaimedTask:
    """A task as a worker took it: what to push, and the revision it must still be at to be marked done."""

    id: int
    session_id: str
    owner_id: int | None
    uid: str
    key: str
    operation: str
    revision: int
    attempts: int
    claim_token: str


def _claimable(now: datetime) -> Q:
    return Q(status=SyncTask.Status.PENDING, next_attempt_at__lte=now) & (
        Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )


def tasks_claim(*, limit: int, lease: timedelta, now: datetime, owner_id: int | None = None) -> list[ClaimedTask]:
    """Take up to `limit` due tasks for one pass, oldest due first; no other worker gets them until the lease ends.

    owner_id: only that account's tasks (the write benchmark's worker keeps to its own account).
    """
    token = uuid.uuid4().hex
    due = SyncTask.objects.filter(_claimable(now))
    if owner_id is not None:
        due = due.filter(owner_id=owner_id)
    with transaction.atomic():
        # 1. the candidates (rows another worker is claiming right now are skipped on PostgreSQL)
        candidates = list(
            due.select_for_update(skip_locked=True)
            .order_by("next_attempt_at", "id")
            .values_list("id", flat=True)[:limit]
        )
        if not candidates:
            return []
        # 2. the claim itself: only rows still claimable when the UPDATE runs
        SyncTask.objects.filter(_claimable(now), id__in=candidates).update(claim_token=token, lease_until=now + lease)
    # 3. what this pass holds
    return [
        ClaimedTask(claim_token=token, **row)
        for row in SyncTask.objects.filter(claim_token=token)
        .order_by("next_attempt_at", "id")
        .values("id", "session_id", "owner_id", "uid", "key", "operation", "revision", "attempts")
    ]


def _held(task: ClaimedTask) -> QuerySet[SyncTask]:
    return SyncTask.objects.filter(id=task.id, claim_token=task.claim_token)


def _release(task: ClaimedTask) -> None:
    _held(task).update(claim_token="", lease_until=None)


def task_hold(task: ClaimedTask, *, lease: timedelta, now: datetime) -> bool:
    """Renew the claim just before pushing; False when another worker took the task meanwhile (this
    pass's lease ran out while it pushed the tasks before), and this one must leave it alone."""
    return bool(_held(task).update(lease_until=now + lease))


def task_done(task: ClaimedTask, *, now: datetime) -> bool:
    """Mark the task done if no change came since it was claimed (True); else release it, still pending (False)."""
    finished = (
        _held(task)
        .filter(revision=task.revision)
        .update(status=SyncTask.Status.DONE, done_at=now, attempts=0, claim_token="", lease_until=None, updated_at=now)
    )
    if not finished:
        _release(task)
    return bool(finished)


def _record_failure(task: ClaimedTask, *, error: str, now: datetime, **changes: object) -> None:
    """Count the failed attempt, keep its error and give the claim back, unless a newer change came meanwhile."""
    updated = (
        _held(task)
        .filter(revision=task.revision)
        .update(
            attempts=F("attempts") + 1,
            last_error=error[:LAST_ERROR_MAX_CHARS],
            last_error_at=now,
            claim_token="",
            lease_until=None,
            updated_at=now,
            **changes,
        )
    )
    if not updated:
        _release(task)


def task_retry_later(task: ClaimedTask, *, error: str, retry_at: datetime, now: datetime) -> None:
    """A push that may pass later failed: count the attempt and wait until retry_at (a new change resets both)."""
    _record_failure(task, error=error, now=now, next_attempt_at=retry_at)


def task_park(task: ClaimedTask, *, error: str, now: datetime) -> None:
    """A push that will not pass as it is failed: the task waits as failed, with its error, for a person."""
    _record_failure(task, error=error, now=now, status=SyncTask.Status.FAILED)


def task_release(task: ClaimedTask) -> None:
    """Give a claimed task back untried (the pass stopped early)."""
    _release(task)


def tasks_retry_failed(*, task_ids: Iterable[int] | None = None, now: datetime) -> int:
    """Put failed tasks (all, or those of task_ids) back in the queue, due now; returns how many."""
    failed = SyncTask.objects.filter(status=SyncTask.Status.FAILED)
    if task_ids is not None:
        failed = failed.filter(id__in=list(task_ids))
    return failed.update(
        status=SyncTask.Status.PENDING,
        attempts=0,
        next_attempt_at=now,
        claim_token="",
        lease_until=None,
        updated_at=now,
    )
