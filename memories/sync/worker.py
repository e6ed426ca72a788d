"""The sync worker: drains the outbox to Honcho, and compares the hub with Honcho.

For each task it claims, the worker pushes the entry as it is now (looked up by its Honcho session
id), or deletes the session when the entry is gone, through `HonchoStore`, which makes both safe to
replay (no second message for a value Honcho already holds; a session already gone is a success).

Failures: what may pass later (no connection, a timeout, 429, 5xx) is retried with exponential
backoff and jitter, at least as late as a 429's Retry-After, up to MEMORYHUB_SYNC_MAX_ATTEMPTS
attempts; what will not (400, 401, 403, 422, and the rest) parks the task as failed with its error,
until `honcho_sync --retry-failed` or the admin's action puts it back. After a few retryable
failures in a row a pass stops (Honcho is down: no point trying every task), so an outage costs a
handful of calls per pass, not one per task.
"""

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from random import Random
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from memories import outbox
from memories.backends.base import BackendError
from memories.backends.honcho import HonchoRecord, HonchoStore, RemoteEntry, record_metadata
from memories.models import PROBE_USERNAME, MemoryEntry, Privacy, SyncTask

logger = logging.getLogger(__name__)

BATCH_SIZE = 50
BACKOFF_BASE_SECONDS = 2.0
BACKOFF_CAP_SECONDS = 900.0
# Retryable failures in a row that end a pass: Honcho is down or overloaded.
FAILURES_IN_A_ROW_TO_STOP = 5
# How long a claim holds a task: well beyond one push (at most 4 calls, each within HONCHO_TIMEOUT).
# It is renewed just before each push, so a slow batch does not lose its later tasks to another worker.
LEASE_MINIMUM_SECONDS = 60.0


@dataclass
class Backoff:
    """Delay before the next attempt: base * 2^(attempts - 1), capped, with "equal jitter" (half fixed,
    half random) so that tasks failed together do not come back together; never below a Retry-After."""

    base: float = BACKOFF_BASE_SECONDS
    cap: float = BACKOFF_CAP_SECONDS
    random: Random = field(default_factory=Random)

    def delay(self, attempts: int, retry_after: float | None = None) -> float:
        ceiling = min(self.cap, self.base * 2 ** max(attempts - 1, 0))
        chosen = ceiling / 2 + self.random.uniform(0, ceiling / 2)
        return max(chosen, retry_after or 0.0)


@dataclass
class DrainReport:
    """What one drain did. `failed` counts pushes that failed (retried later or parked)."""

    pushed: int = 0
    retrying: int = 0
    parked: int = 0
    superseded: int = 0
    stopped_early: bool = False
    last_error: str = ""

    @property
    def failed(self) -> int:
        return self.retrying + self.parked

    def add(self, other: "DrainReport") -> None:
        self.pushed += other.pushed
        self.retrying += other.retrying
        self.parked += other.parked
        self.superseded += other.superseded
        self.stopped_early = self.stopped_early or other.stopped_early
        self.last_error = other.last_error or self.last_error


def honcho_record(entry: MemoryEntry) -> HonchoRecord:
    """The entry as its Honcho session holds it."""
    return HonchoRecord(
        owner_id=entry.owner_id,
        uid=entry.uid,
        key=entry.key,
        value=entry.value,
        kind=entry.kind,
        meta=entry.meta,
        created=entry.created,
        updated=entry.updated,
        version=entry.version,
    )


class SyncWorker:
    """Drains the outbox through one HonchoStore (one worker per thread or process).

    clock and backoff are injectable so tests run without waiting; max_attempts defaults to
    MEMORYHUB_SYNC_MAX_ATTEMPTS; owner_id keeps the worker to one account's tasks (for the write
    benchmark, which must not touch anyone else's).
    """

    def __init__(
        self,
        store: HonchoStore,
        *,
        batch_size: int = BATCH_SIZE,
        max_attempts: int | None = None,
        backoff: Backoff | None = None,
        clock: Callable[[], datetime] = timezone.now,
        failures_in_a_row_to_stop: int = FAILURES_IN_A_ROW_TO_STOP,
        owner_id: int | None = None,
    ) -> None:
        self.store = store
        self.batch_size = batch_size
        self.max_attempts = max_attempts or settings.MEMORYHUB_SYNC_MAX_ATTEMPTS
        self.backoff = backoff or Backoff()
        self.clock = clock
        self.failures_in_a_row_to_stop = failures_in_a_row_to_stop
        self.owner_id = owner_id
        self.lease = timedelta(seconds=max(LEASE_MINIMUM_SECONDS, 10 * store.config.timeout))

    def push(self, task: outbox.ClaimedTask) -> None:
        """Make Honcho hold the entry as it is now, or not at all when it is gone (or local). Raises BackendError."""
        entry = MemoryEntry.objects.filter(honcho_session_id=task.session_id).select_related("owner").first()
        if entry is None or entry.privacy == Privacy.LOCAL or entry.owner.get_username() == PROBE_USERNAME:
            self.store.delete_session(task.session_id)
            return
        self.store.upsert(honcho_record(entry), session_id=entry.honcho_session_id)

    def run_pass(self) -> DrainReport:
        """Claim one batch of due tasks and push each; stop early when Honcho keeps failing."""
        report = DrainReport()
        tasks = outbox.tasks_claim(limit=self.batch_size, lease=self.lease, now=self.clock(), owner_id=self.owner_id)
        failures_in_a_row = 0
        for position, task in enumerate(tasks):
            if failures_in_a_row >= self.failures_in_a_row_to_stop:
                for untried in tasks[position:]:
                    outbox.task_release(untried)
                report.stopped_early = True
                break
            if not outbox.task_hold(task, lease=self.lease, now=self.clock()):
                continue
            try:
                self.push(task)
            except BackendError as error:
                report.last_error = error.message
                now = self.clock()
                if error.retryable and task.attempts + 1 < self.max_attempts:
                    failures_in_a_row += 1
                    delay = self.backoff.delay(task.attempts + 1, error.retry_after)
                    outbox.task_retry_later(task, error=error.message, retry_at=now + timedelta(seconds=delay), now=now)
                    report.retrying += 1
                else:
                    reason = (
                        error.message
                        if not error.retryable
                        else f"gave up after {task.attempts + 1} attempts: {error.message}"
                    )
                    outbox.task_park(task, error=reason, now=now)
                    report.parked += 1
                logger.warning(
                    "sync of %s/%s (session %s) failed: %s", task.uid, task.key, task.session_id, error.message
                )
                continue
            failures_in_a_row = 0
            if outbox.task_done(task, now=self.clock()):
                report.pushed += 1
            else:
                report.superseded += 1
        return report

    def drain(self, stop: threading.Event | None = None) -> DrainReport:
        """Passes until nothing is due (tasks waiting out a backoff are not due), a pass stops early,
        or `stop` is set (checked between passes of at most batch_size tasks).

        The loop body of `honcho_sync --loop`, and all of `--once`.
        """
        report = DrainReport()
        while stop is None or not stop.is_set():
            one_pass = self.run_pass()
            report.add(one_pass)
            tried = one_pass.pushed + one_pass.failed + one_pass.superseded
            if one_pass.stopped_early or tried == 0:
                break
        return report


# Reconciliation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One way Honcho differs from the hub: an entry missing or stale there, or a session extra there."""

    kind: str  # "missing", "stale", "extra" or "local"
    session_id: str
    owner_id: int | None
    uid: str
    key: str
    version: int


@dataclass
class Reconciliation:
    entries: int = 0
    sessions: int = 0
    differences: list[Difference] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(1 for difference in self.differences if difference.kind == kind)


def reconcile(store: HonchoStore) -> Reconciliation:
    """Compare every entry of the hub (the probe's aside) with every session the hub wrote in Honcho.

    missing: a shared entry Honcho has no session for; stale: its session holds another state; extra:
    a session no entry holds (the entry was deleted, or its account); local: a session holding a
    local entry (by its session id, or by its account, uid and key: one left from before it was made
    local), which should never be found. Raises BackendError.
    """
    remote: dict[str, RemoteEntry] = {found.session_id: found for found in store.all_records()}
    result = Reconciliation(sessions=len(remote))
    by_identity: dict[tuple[int | None, str, str], list[str]] = {}
    for session_id, held_there in remote.items():
        record = held_there.record
        by_identity.setdefault((record.owner_id, record.uid, record.key), []).append(session_id)
    entries = MemoryEntry.objects.exclude(owner__username=PROBE_USERNAME).order_by("pk").iterator(chunk_size=1000)
    for entry in entries:
        result.entries += 1
        identity: dict[str, Any] = {
            "session_id": entry.honcho_session_id,
            "owner_id": entry.owner_id,
            "uid": entry.uid,
            "key": entry.key,
            "version": entry.version,
        }
        if entry.privacy == Privacy.LOCAL:
            held = {entry.honcho_session_id, *by_identity.get((entry.owner_id, entry.uid, entry.key), ())}
            for session_id in held & remote.keys():
                del remote[session_id]
                result.differences.append(Difference(kind="local", **{**identity, "session_id": session_id}))
            continue
        found = remote.pop(entry.honcho_session_id, None)
        if found is None:
            result.differences.append(Difference(kind="missing", **identity))
        elif record_metadata(found.record) != record_metadata(honcho_record(entry)):
            result.differences.append(Difference(kind="stale", **identity))
    for session_id, found in remote.items():
        record = found.record
        result.differences.append(
            Difference(
                kind="extra",
                session_id=session_id,
                owner_id=record.owner_id,
                uid=record.uid,
                key=record.key,
                version=record.version,
            )
        )
    return result


def reconciliation_fix(result: Reconciliation, *, now: datetime) -> int:
    """Queue the tasks that repair what a reconciliation found; returns how many were queued.

    Missing and stale entries are pushed again; extra sessions, and those holding a local entry, are deleted.
    """
    existing_accounts = set(get_user_model().objects.values_list("pk", flat=True))
    removed = ("extra", "local")
    with transaction.atomic():
        to_push = [difference.session_id for difference in result.differences if difference.kind not in removed]
        entries: list[MemoryEntry] = []
        for start in range(0, len(to_push), outbox.RECORD_CHUNK):
            entries += MemoryEntry.objects.filter(honcho_session_id__in=to_push[start : start + outbox.RECORD_CHUNK])
        outbox.tasks_record(entries, operation=SyncTask.Operation.UPSERT, now=now)
        extras = [difference for difference in result.differences if difference.kind in removed]
        for extra in extras:
            owner_id = extra.owner_id if extra.owner_id in existing_accounts else None
            outbox.session_delete_record(
                session_id=extra.session_id,
                owner_id=owner_id,
                uid=extra.uid,
                key=extra.key,
                version=extra.version,
                now=now,
            )
    return len(entries) + len(extras)
