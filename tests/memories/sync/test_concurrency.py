"""Two workers draining one outbox at once, each on its own database connection: each task is done once."""

import threading
from typing import Any

import pytest
from django.db import connection

from memories import services
from memories.models import SyncTask
from memories.outbox import ClaimedTask
from memories.sync.worker import SyncWorker
from tests.support.sync import waiting


class RecordingWorker(SyncWorker):
    """A worker that notes every push it makes (and where two workers could collide, gives the other a turn)."""

    def __init__(self, *args: Any, pushes: list[tuple[str, str, int]], name: str, **options: Any) -> None:
        super().__init__(*args, **options)
        self.pushes, self.name = pushes, name

    def push(self, task: ClaimedTask) -> None:
        self.pushes.append((self.name, task.session_id, task.revision))
        super().push(task)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("sync_on")
def test_two_workers_at_once_do_each_task_once(owner, honcho_double, make_worker):
    for number in range(120):
        services.entry_put(owner=owner, uid=f"user{number % 4}", key=f"k{number}", value=f"v{number}")
    pushes: list[tuple[str, str, int]] = []
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(name: str) -> None:
        base = make_worker(batch_size=7)
        worker = RecordingWorker(
            base.store, pushes=pushes, name=name, batch_size=7, clock=base.clock, backoff=base.backoff
        )
        try:
            start.wait()
            worker.drain()
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread to fail it
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert waiting() == 0 and SyncTask.objects.filter(status=SyncTask.Status.DONE).count() == 120
    sessions_pushed = [session_id for _, session_id, _ in pushes]
    assert len(sessions_pushed) == len(set(sessions_pushed)) == 120
    assert {name for name, _, _ in pushes} == {"first", "second"}
    assert len(honcho_double.calls_to("POST", "/messages")) == 120
