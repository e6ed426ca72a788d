"""What sync costs a write: puts timed with sync off and with sync on while Honcho is down, side by side.

With sync on, a write adds one statement to its transaction (the outbox's INSERT ... ON CONFLICT)
and never calls Honcho, so Honcho being down or slow cannot slow it. This measures that claim on
the hub's own database, with a sync worker draining all along against a Honcho that refuses
connections (a closed port on 127.0.0.1), as a deployment whose Honcho is down would have. The puts
are made by a throwaway account that is removed afterwards, with its entries, history and outbox
rows; the worker touches only that account's tasks.
"""

import functools
import logging
import socket
import threading
import uuid
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test.utils import override_settings

from benchmarks.timing import Timings, timed
from memories import services
from memories.backends.honcho import HonchoConfig, HonchoStore
from memories.models import SyncTask
from memories.sync.worker import SyncWorker

KEYS_PER_RUN = 100
BENCH_USERNAME_PREFIX = "memoryhub-sync-bench-"


@dataclass(frozen=True)
class OverheadReport:
    writes: int
    block: int
    database: str
    off: Timings
    on: Timings
    tasks_queued: int
    tasks_pending: int
    worker_interval: float
    worker_drains: int

    def table(self) -> str:
        rows = [("", "p50 ms", "p95 ms", "mean ms")]
        for timings in (self.off, self.on):
            rows.append((timings.label, f"{timings.p50:.3f}", f"{timings.p95:.3f}", f"{timings.mean:.3f}"))
        rows.append(
            (
                "difference",
                f"{self.on.p50 - self.off.p50:+.3f}",
                f"{self.on.p95 - self.off.p95:+.3f}",
                f"{self.on.mean - self.off.mean:+.3f}",
            )
        )
        widths = [max(len(row[column]) for row in rows) for column in range(4)]
        lines = [
            f"{self.writes} puts with sync off and {self.writes} with sync on, in alternating blocks of {self.block}, "
            f"on {self.database}; a worker drained every {self.worker_interval:g} s against a Honcho that is down "
            f"({self.worker_drains} drains)"
        ]
        lines += [
            "  ".join(
                [row[0].ljust(widths[0]), *(cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))]
            )
            for row in rows
        ]
        lines.append(
            f"outbox rows left by the puts with sync on: {self.tasks_queued} "
            f"(their {self.writes} changes collapsed per entry), "
            f"{self.tasks_pending} of them pending"
        )
        return "\n".join(lines)


def _timed_puts(owner: User, uid: str, first: int, count: int) -> list[float]:
    samples = []
    for number in range(first, first + count):
        put = functools.partial(
            services.entry_put, owner=owner, uid=uid, key=f"key-{number % KEYS_PER_RUN}", value=f"value {number}"
        )
        _, seconds = timed(put)
        samples.append(seconds * 1000)
    return samples


def _unreachable_honcho() -> HonchoConfig:
    """A Honcho that refuses every connection: a port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    return HonchoConfig(
        base_url=f"http://127.0.0.1:{port}", api_key="", workspace_id="memoryhub-bench", timeout=1.0, configured=True
    )


class _DownHonchoWorker(threading.Thread):
    """A sync worker draining the account's tasks every `interval` seconds into a Honcho that is down."""

    def __init__(self, *, owner_id: int, interval: float) -> None:
        super().__init__(name="sync-overhead-worker", daemon=True)
        self.owner_id, self.interval = owner_id, interval
        self.stop = threading.Event()
        self.drains = 0

    def run(self) -> None:
        store = HonchoStore(_unreachable_honcho(), max_retries=0)
        worker = SyncWorker(store, owner_id=self.owner_id)
        worker_log = logging.getLogger("memories.sync.worker")
        level = worker_log.level
        worker_log.setLevel(logging.ERROR)  # every failed push is expected here: Honcho is down on purpose
        try:
            while not self.stop.wait(self.interval):
                worker.drain()
                self.drains += 1
        finally:
            worker_log.setLevel(level)
            store.close()
            connection.close()


def sync_overhead_measure(*, writes: int, block: int = 50, worker_interval: float = 0.5) -> OverheadReport:
    """Time `writes` puts with sync off and as many with it on, alternating blocks so drift hits both alike.

    On each side the first 100 puts create entries and the rest update them. A worker drains the
    account's tasks every worker_interval seconds throughout, into a Honcho that is down.
    """
    account = get_user_model().objects.create(username=BENCH_USERNAME_PREFIX + uuid.uuid4().hex[:12], is_active=False)
    off: list[float] = []
    on: list[float] = []
    worker = _DownHonchoWorker(owner_id=account.pk, interval=worker_interval)
    worker.start()
    try:
        for first in range(0, writes, block):
            count = min(block, writes - first)
            with override_settings(MEMORYHUB_HONCHO_SYNC=False):
                off += _timed_puts(account, "sync-off", first, count)
            with override_settings(MEMORYHUB_HONCHO_SYNC=True):
                on += _timed_puts(account, "sync-on", first, count)
    finally:
        worker.stop.set()
        worker.join()
        tasks_queued = SyncTask.objects.filter(owner=account).count()
        tasks_pending = SyncTask.objects.filter(owner=account, status=SyncTask.Status.PENDING).count()
        with transaction.atomic():
            # The outbox rows would outlive the account (their owner is SET_NULL); its entries and
            # history go with it (CASCADE).
            SyncTask.objects.filter(owner=account).delete()
            account.delete()
    database = f"{connection.vendor} ({connection.settings_dict['NAME']})"
    return OverheadReport(
        writes=writes,
        block=block,
        database=database,
        off=Timings("sync off", off),
        on=Timings("sync on, Honcho down", on),
        tasks_queued=tasks_queued,
        tasks_pending=tasks_pending,
        worker_interval=worker_interval,
        worker_drains=worker.drains,
    )
