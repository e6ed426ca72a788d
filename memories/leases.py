"""Claiming, holding and finishing a LeasedJob (memories.models): the outbox's claim and lease, for one job at a time.

A worker takes the oldest claimable job (pending, or running with a lease that ran out: its worker
died) with SELECT ... FOR UPDATE SKIP LOCKED on PostgreSQL (a plain read on SQLite, which has one
writer at a time) and one conditional UPDATE that only succeeds while the job is still claimable,
so two workers never hold the same job. While the job runs, a LeaseKeeper renews the lease in a
thread; every later write is made only if the claim token is still the one taken, so a worker that
lost its job (it stalled past its lease) can no longer change it.

A job taken JOB_MAX_ATTEMPTS times whose lease ran out again is failed with an error that says so:
a job that kills its worker is not retried forever, and none stays "running" forever.
"""

import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from memories.models import LeasedJob

logger = logging.getLogger(__name__)

JOB_MAX_ATTEMPTS = 3
JOB_LEASE = timedelta(seconds=60)
# How often a running job's lease is renewed: several renewals fit in one lease, so one slow
# database round trip does not lose the job.
LEASE_RENEW_EVERY = timedelta(seconds=15)
ERROR_MAX_CHARS = 2000


@dataclass(frozen=True)
class Claim:
    """A job as a worker took it: which row, the token that proves the claim, and the attempt this is."""

    model: type[LeasedJob]
    pk: int
    token: str
    attempts: int


def _claimable(now: datetime) -> Q:
    return Q(status=LeasedJob.Status.PENDING) | Q(status=LeasedJob.Status.RUNNING, lease_until__lt=now)


def jobs_abandoned_fail(model: type[LeasedJob], *, now: datetime, max_attempts: int = JOB_MAX_ATTEMPTS) -> int:
    """Fail the running jobs whose lease ran out after their last allowed attempt (ended now, where the model keeps
    when a job ended); returns how many."""
    ended = {model.FINISHED_FIELD: now} if model.FINISHED_FIELD else {}
    return model._default_manager.filter(
        status=LeasedJob.Status.RUNNING, lease_until__lt=now, attempts__gte=max_attempts
    ).update(
        status=LeasedJob.Status.FAILED,
        error=f"the worker stopped during each of {max_attempts} attempts (it was killed or lost the database)",
        claim_token="",
        lease_until=None,
        **ended,
    )


def job_claim(
    model: type[LeasedJob],
    *,
    now: datetime,
    lease: timedelta = JOB_LEASE,
    max_attempts: int = JOB_MAX_ATTEMPTS,
    **changes: Any,
) -> Claim | None:
    """Take the oldest claimable job of model (None when there is none), running under a new lease.

    changes: more fields to set in the same UPDATE (a run's `started`).
    """
    jobs_abandoned_fail(model, now=now, max_attempts=max_attempts)
    token = uuid.uuid4().hex
    with transaction.atomic():
        candidate = (
            model._default_manager.filter(_claimable(now))
            .select_for_update(skip_locked=True)
            .order_by("pk")
            .values_list("pk", flat=True)
            .first()
        )
        if candidate is None:
            return None
        taken = model._default_manager.filter(_claimable(now), pk=candidate).update(
            status=LeasedJob.Status.RUNNING,
            claim_token=token,
            lease_until=now + lease,
            attempts=F("attempts") + 1,
            **changes,
        )
        if not taken:
            return None
    attempts = model._default_manager.filter(pk=candidate).values_list("attempts", flat=True).get()
    return Claim(model=model, pk=candidate, token=token, attempts=attempts)


def held(claim: Claim) -> QuerySet[LeasedJob]:
    """The job, only while this claim still holds it (every write about a claimed job goes through this)."""
    return claim.model._default_manager.filter(pk=claim.pk, claim_token=claim.token, status=LeasedJob.Status.RUNNING)


def job_renew(claim: Claim, *, now: datetime, lease: timedelta = JOB_LEASE) -> bool:
    """Extend the lease; False when the claim was lost (another worker took the job)."""
    return bool(held(claim).update(lease_until=now + lease))


def job_done(claim: Claim, **changes: Any) -> bool:
    """Finish the job done, with changes (its results' fields); False when the claim was lost."""
    return bool(held(claim).update(status=LeasedJob.Status.DONE, claim_token="", lease_until=None, **changes))


def job_fail(claim: Claim, *, error: str, **changes: Any) -> bool:
    """Finish the job failed with its error; False when the claim was lost."""
    return bool(
        held(claim).update(
            status=LeasedJob.Status.FAILED,
            error=error[:ERROR_MAX_CHARS],
            claim_token="",
            lease_until=None,
            **changes,
        )
    )


def job_release(claim: Claim) -> bool:
    """Give the job back untouched (the worker is stopping): pending again, this attempt not counted."""
    return bool(
        held(claim).update(
            status=LeasedJob.Status.PENDING, claim_token="", lease_until=None, attempts=F("attempts") - 1
        )
    )


class LeaseKeeper:
    """Renews a claim's lease every `every` in a thread while the job runs; `lost` is set when it cannot."""

    def __init__(self, claim: Claim, *, lease: timedelta = JOB_LEASE, every: timedelta = LEASE_RENEW_EVERY) -> None:
        self.claim = claim
        self.lease = lease
        self.every = every
        self.lost = threading.Event()
        self.renewed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew, name=f"lease-{claim.model.__name__}-{claim.pk}", daemon=True
        )

    def _renew(self) -> None:
        try:
            while not self._stop.wait(self.every.total_seconds()):
                try:
                    still_held = job_renew(self.claim, now=timezone.now(), lease=self.lease)
                except DatabaseError as error:
                    # the lease has time left (several renewals fit in it): try again at the next beat
                    logger.warning(
                        "could not renew the lease on %s %s: %s", self.claim.model.__name__, self.claim.pk, error
                    )
                    connection.close()
                    continue
                if not still_held:
                    logger.warning("lost the claim on %s %s", self.claim.model.__name__, self.claim.pk)
                    self.lost.set()
                    return
                self.renewed.set()
        finally:
            connection.close()  # this thread's own connection

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def lease_kept(
    claim: Claim, *, lease: timedelta = JOB_LEASE, every: timedelta = LEASE_RENEW_EVERY
) -> Iterator[LeaseKeeper]:
    """Keep the claim's lease renewed for as long as the block runs."""
    keeper = LeaseKeeper(claim, lease=lease, every=every)
    keeper.start()
    try:
        yield keeper
    finally:
        keeper.stop()
