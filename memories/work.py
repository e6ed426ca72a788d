"""The worker: one process for all the hub's background work (`manage.py work`).

Kinds of work reach it through settings.MEMORYHUB_JOB_KINDS, dotted paths of JobKind objects (the
sync outbox in memories.jobs, evaluation runs in evaluation.jobs, ...), so memories never imports
the apps that build on it. Each kind says what of it waits (a queryset, counted by /healthz and
/api/v1/info) and makes a runner that does what is due.

`--loop` gives each kind a lane: its own thread, runner and database connection, so a long job of
one kind (an evaluation of 1,000 operations against a slow Honcho) never holds up another (sync
keeps flowing). A lane checks the stop event between jobs (and a runner between steps): SIGTERM
ends the process between jobs, never in the middle of a write. Meanwhile the main thread writes the
worker's heartbeat row every HEARTBEAT_EVERY, which is how the hub knows a worker is there.

`--once` runs each kind in turn until nothing of it is due, beats once, and returns what it did.
"""

import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import F, Func, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string

from memories.models import WORKER_NAME_MAX_LENGTH, WorkerHeartbeat

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = timedelta(seconds=10)
# A worker whose heartbeat is older than this is taken for gone (/healthz, /api/v1/info, the overview).
WORKER_SEEN_WITHIN = timedelta(seconds=60)
# Heartbeat rows of workers that died without saying goodbye are removed after this.
HEARTBEAT_FORGET_AFTER = timedelta(days=1)
# A lane whose database went away waits this long before trying again.
DATABASE_RETRY_SECONDS = 5.0


@dataclass
class WorkReport:
    """What one call of a runner did: units of work finished, units that failed, and a line for the log."""

    done: int = 0
    failed: int = 0
    summary: str = ""

    @property
    def did_something(self) -> bool:
        return bool(self.done or self.failed)


class JobRunner(Protocol):
    """Does one kind's work in one thread (it may hold a connection to a remote service)."""

    def run_due(self, stop: threading.Event) -> WorkReport:
        """Do what is due now, checking `stop` between jobs; a report with nothing done means nothing was due."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class JobKind:
    """One kind of background work.

    waiting: the rows that wait to be worked on (counted, never fetched).
    runner: makes a runner for one lane.
    unavailable: "" when this kind can run here, else why not (sync without Honcho configured).
    poll_seconds: how long an idle lane waits before looking again.
    """

    name: str
    waiting: Callable[[], QuerySet]
    runner: Callable[[], JobRunner]
    poll_seconds: Callable[[], float]
    unavailable: Callable[[], str] = lambda: ""


def job_kinds(names: Sequence[str] | None = None) -> list[JobKind]:
    """The kinds listed in settings.MEMORYHUB_JOB_KINDS, or only those named (raises LookupError for another name)."""
    kinds = [import_string(path) for path in settings.MEMORYHUB_JOB_KINDS]
    if names is None:
        return kinds
    by_name = {kind.name: kind for kind in kinds}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise LookupError(f"unknown kind of work {unknown[0]!r}: choose from {', '.join(by_name)}")
    return [by_name[name] for name in dict.fromkeys(names)]


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:WORKER_NAME_MAX_LENGTH]


def heartbeat_beat(*, name: str, kinds: Sequence[str], started_at: datetime, now: datetime) -> None:
    """Say that this worker is alive (one upsert), and forget workers silent for a day."""
    WorkerHeartbeat.objects.update_or_create(
        name=name, defaults={"kinds": ",".join(kinds), "started_at": started_at, "seen_at": now, "stopped_at": None}
    )
    WorkerHeartbeat.objects.filter(seen_at__lt=now - HEARTBEAT_FORGET_AFTER).delete()


def heartbeat_end(*, name: str) -> None:
    """This worker stops: it no longer counts as there, and the hub can still say when a worker was last seen."""
    now = timezone.now()
    WorkerHeartbeat.objects.filter(name=name).update(seen_at=now, stopped_at=now)


@dataclass(frozen=True)
class WorkStatus:
    """Whether a worker has been seen within WORKER_SEEN_WITHIN, when one last was, and how much of each kind waits."""

    worker_seen: bool
    last_seen: datetime | None
    waiting: dict[str, int]

    @property
    def waiting_total(self) -> int:
        return sum(self.waiting.values())

    @property
    def healthy(self) -> bool:
        """False when work waits and no worker has been seen to do it."""
        return self.worker_seen or not self.waiting_total

    def as_json(self) -> dict[str, Any]:
        """The shape /healthz and /api/v1/info answer with."""
        return {
            "worker_seen": self.worker_seen,
            "last_seen": self.last_seen.isoformat() if self.last_seen else None,
            "waiting": self.waiting,
        }


def _as_datetime(value: datetime | str | None) -> datetime | None:
    """A datetime read through a raw cursor (SQLite gives text; both are stored in UTC)."""
    if value is None or isinstance(value, datetime):
        return value
    moment = parse_datetime(value)
    return moment if moment is None or timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


def work_status(*, now: datetime | None = None) -> WorkStatus:
    """The newest heartbeat (of any worker, and of a running one) and each kind's waiting count, in one query
    (hub-wide: no account's data).

    The query is SELECT (newest heartbeats), (count of kind 1's waiting rows), ...: each part is the
    ORM's SQL for that kind's `waiting` queryset, so it uses that table's own indexes.
    """
    now = now or timezone.now()
    kinds = job_kinds()
    heartbeats = WorkerHeartbeat.objects.order_by()
    # The newest heartbeat of any worker, and of a running one (a worker that stopped is not there).
    parts = [
        heartbeats.annotate(newest=Func(F("seen_at"), function="MAX")).values("newest"),
        heartbeats.filter(stopped_at=None).annotate(newest=Func(F("seen_at"), function="MAX")).values("newest"),
    ]
    parts += [
        kind.waiting().order_by().annotate(waiting=Func(F("pk"), function="COUNT")).values("waiting") for kind in kinds
    ]
    selects: list[str] = []
    parameters: list[Any] = []
    for part in parts:
        try:
            sql, part_parameters = part.query.sql_with_params()
        except EmptyResultSet:  # a kind whose waiting queryset is .none(): nothing waits
            selects.append("0")
            continue
        selects.append(f"({sql})")
        parameters.extend(part_parameters)
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(selects), parameters)
        row = cursor.fetchone()
    last_seen, running_seen = _as_datetime(row[0]), _as_datetime(row[1])
    return WorkStatus(
        worker_seen=running_seen is not None and now - running_seen <= WORKER_SEEN_WITHIN,
        last_seen=last_seen,
        waiting={kind.name: int(count or 0) for kind, count in zip(kinds, row[2:], strict=True)},
    )


class Worker:
    """Runs the kinds given, once or in lanes until stopped; `out` receives a line for each thing done.

    poll_seconds: overrides every kind's idle wait (honcho_sync --interval).
    """

    def __init__(
        self,
        kinds: Sequence[JobKind],
        *,
        out: Callable[[str], None] = logger.info,
        poll_seconds: float | None = None,
        name: str | None = None,
    ) -> None:
        self.kinds = list(kinds)
        self.out = out
        self.poll_seconds = poll_seconds
        self.name = name or worker_name()
        self.started_at = timezone.now()
        self.lane_failed: str = ""

    def beat(self) -> None:
        heartbeat_beat(
            name=self.name, kinds=[kind.name for kind in self.kinds], started_at=self.started_at, now=timezone.now()
        )

    def _report(self, kind: JobKind, report: WorkReport) -> None:
        if report.did_something and report.summary:
            self.out(f"{kind.name}: {report.summary}")

    def run_once(self, stop: threading.Event | None = None) -> dict[str, WorkReport]:
        """Each kind in turn until nothing of it is due (or `stop` is set); what each did, added up."""
        stop = stop or threading.Event()
        self.beat()
        totals: dict[str, WorkReport] = {}
        for kind in self.kinds:
            total = totals.setdefault(kind.name, WorkReport())
            runner = kind.runner()
            try:
                while not stop.is_set():
                    report = runner.run_due(stop)
                    self._report(kind, report)
                    total.done += report.done
                    total.failed += report.failed
                    total.summary = report.summary or total.summary
                    if not report.did_something:
                        break
            finally:
                runner.close()
        self.beat()
        return totals

    def _lane(self, kind: JobKind, stop: threading.Event) -> None:
        poll = self.poll_seconds if self.poll_seconds is not None else kind.poll_seconds()
        runner = kind.runner()
        try:
            while not stop.is_set():
                # a long-lived thread: drop a database connection that is too old or broken, as a request would
                close_old_connections()
                try:
                    report = runner.run_due(stop)
                except DatabaseError as error:
                    logger.warning("%s: the database failed (%s); trying again in %g s", kind.name, error, poll)
                    connection.close()
                    stop.wait(DATABASE_RETRY_SECONDS)
                    continue
                self._report(kind, report)
                if not report.did_something:
                    stop.wait(poll)
        except Exception:
            # Anything else is a bug: stop the whole worker (its process manager restarts it), rather
            # than keep beating with a lane that no longer works. The job it held is retried later.
            logger.exception("the %s lane stopped", kind.name)
            self.lane_failed = kind.name
            stop.set()
            raise
        finally:
            runner.close()
            connection.close()

    def run_loop(self, stop: threading.Event) -> None:
        """One lane per kind, and the heartbeat, until `stop` is set; then each lane finishes its job."""
        lanes = [
            threading.Thread(target=self._lane, args=(kind, stop), name=f"work-{kind.name}", daemon=True)
            for kind in self.kinds
        ]
        self.beat()
        for lane in lanes:
            lane.start()
        try:
            while not stop.wait(HEARTBEAT_EVERY.total_seconds()):
                close_old_connections()
                try:
                    self.beat()
                except DatabaseError as error:
                    logger.warning("the heartbeat failed: %s", error)
                    connection.close()
        finally:
            stop.set()
            for lane in lanes:
                lane.join()
            try:
                heartbeat_end(name=self.name)
            except DatabaseError as error:
                logger.warning("could not mark the heartbeat stopped: %s", error)


def run_until_signalled(worker: Worker, stop: threading.Event | None = None) -> None:
    """worker.run_loop until SIGTERM or SIGINT (or `stop` is set); the handlers before are put back after.

    A signal handler runs in the main thread between two of its steps, possibly while that thread holds
    `stop`'s own lock (inside stop.wait or stop.set, as the loop always is): setting the event there
    would wait for that lock forever. Two signals close together did it, as `make run`'s Ctrl-C sends
    (SIGINT to the worker, then SIGTERM from the Makefile's trap): the worker hung instead of stopping.
    So the handler only writes a byte to a pipe, and a thread of its own reads it and sets the event.
    """
    stop = stop or threading.Event()
    readable, writable = os.pipe()
    os.set_blocking(writable, False)

    def request_stop(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):  # the pipe is full: a stop is asked for already
            os.write(writable, b"\0")

    def relay() -> None:
        if os.read(readable, 1):  # b"" once the pipe is closed: the loop ended without a signal
            stop.set()

    relay_thread = threading.Thread(target=relay, name="work-signals", daemon=True)
    relay_thread.start()
    previous = {}
    if threading.current_thread() is threading.main_thread():  # signal handlers can only be set there
        previous = {number: signal.signal(number, request_stop) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        worker.run_loop(stop)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        os.close(writable)
        relay_thread.join()
        os.close(readable)
