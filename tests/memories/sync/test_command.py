"""`manage.py honcho_sync`: --once, --loop, --retry-failed, --reconcile [--fix], against a double on 127.0.0.1."""

import io
import os
import signal
import threading

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from honcho_double import HonchoDouble
from memories import services
from memories.management.commands.honcho_sync import Command
from memories.models import MemoryEntry, SyncTask, WorkerHeartbeat
from memories.work import JobKind, Worker, WorkReport, work_status
from tests.support.sync import waiting

pytestmark = pytest.mark.usefixtures("sync_on")


def honcho_sync(*arguments: str) -> str:
    out = io.StringIO()
    call_command("honcho_sync", *arguments, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_once_drains_the_outbox_and_says_what_it_did(owner, served_double):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="shell", value="fish")

    assert honcho_sync("--once") == "pushed 2, failed 0 (0 to retry, 0 parked); outbox now: 0 pending, 0 failed\n"
    assert len(served_double.sessions("memoryhub-tests")) == 2


def test_once_fails_when_a_push_failed_and_retry_failed_puts_parked_tasks_back(owner, served_double):
    served_double.faults.unauthorized = True
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")

    with pytest.raises(CommandError, match=r"1 push\(es\) failed; last error: .*refused the API key \(401\)"):
        honcho_sync("--once")
    assert waiting(SyncTask.Status.FAILED) == 1

    served_double.faults.reset()
    assert honcho_sync("--retry-failed") == "1 failed task(s) queued again.\n"
    assert honcho_sync("--once").startswith("pushed 1, failed 0")


def test_the_command_refuses_to_run_without_honcho_configured(settings):
    settings.HONCHO_URL, settings.HONCHO_API_KEY = "", ""
    with pytest.raises(CommandError, match="Honcho is not configured"):
        honcho_sync("--once")
    with pytest.raises(CommandError, match="--fix goes with --reconcile"):
        honcho_sync("--once", "--fix")
    with pytest.raises(CommandError, match="--interval must be greater than 0; got 0"):
        honcho_sync("--loop", "--interval", "0")


@pytest.mark.process  # sends SIGTERM to its own process
@pytest.mark.django_db(transaction=True)  # the loop's lanes have their own database connections
def test_the_loop_drains_until_sigterm_and_then_stops_cleanly():
    class OneDrainThenSigterm:
        drains = 0

        def run_due(self, stop: threading.Event) -> WorkReport:
            OneDrainThenSigterm.drains += 1
            os.kill(os.getpid(), signal.SIGTERM)  # as a process manager stopping the service would
            stop.wait(5)  # the signal is handled in the main thread, which sets stop
            return WorkReport(done=3, summary="pushed 3")

        def close(self) -> None:
            pass

    kind = JobKind(name="sync", waiting=SyncTask.objects.none, runner=OneDrainThenSigterm, poll_seconds=lambda: 3600)
    out = io.StringIO()
    previous = signal.getsignal(signal.SIGTERM)
    command = Command(stdout=out)

    command.loop(Worker([kind], out=command.stdout.write, name="sync-test"))  # returns at once on SIGTERM

    assert OneDrainThenSigterm.drains == 1
    assert out.getvalue().splitlines()[-1] == "honcho_sync: stopped"
    assert "sync: pushed 3" in out.getvalue()
    assert signal.getsignal(signal.SIGTERM) is previous
    assert WorkerHeartbeat.objects.get(name="sync-test").stopped_at is not None
    status = work_status()
    assert not status.worker_seen, "a worker that stops no longer counts as there"
    assert status.last_seen is not None, "when it was last seen is still told"


def test_reconcile_reports_what_honcho_misses_holds_stale_or_holds_extra_and_fix_repairs_it(
    owner, served_double: HonchoDouble, settings
):
    for key in ("kept", "changed", "deleted"):
        services.entry_put(owner=owner, uid="alice", key=key, value="v1")
    honcho_sync("--once")
    settings.MEMORYHUB_HONCHO_SYNC = False  # changes made while sync was off
    services.entry_put(owner=owner, uid="alice", key="changed", value="v2")
    services.entry_put(owner=owner, uid="alice", key="new", value="v1")
    services.entry_delete(owner=owner, uid="alice", key="deleted")

    report = honcho_sync("--reconcile")
    assert report.splitlines()[0] == (
        "3 entries in the hub, 3 sessions in Honcho: 1 missing, 1 stale, 1 extra, "
        "0 local-only entries in Honcho (should be 0)"
    )
    assert {line.split()[0] for line in report.splitlines()[1:]} == {"missing", "stale", "extra"}

    assert honcho_sync("--reconcile", "--fix").splitlines()[-1].startswith("3 task(s) queued")
    honcho_sync("--once")
    served_double.purge()
    assert (
        honcho_sync("--reconcile").splitlines()[0]
        == "3 entries in the hub, 3 sessions in Honcho: 0 missing, 0 stale, 0 extra, "
        "0 local-only entries in Honcho (should be 0)"
    )


def test_sync_overhead_prints_both_sides_and_leaves_nothing_behind(owner, settings):
    settings.MEMORYHUB_HONCHO_SYNC = False
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    out = io.StringIO()

    # the down-Honcho worker never gets its turn: this test's transaction holds the database
    call_command("sync_overhead", "--writes", "20", "--block", "5", "--worker-interval", "3600", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith("20 puts with sync off and 20 with sync on, in alternating blocks of 5")
    assert [line.split()[0] for line in lines[1:5]] == ["p50", "sync", "sync", "difference"]
    assert lines[-1].endswith("20 of them pending")
    assert SyncTask.objects.count() == 0
    assert list(MemoryEntry.objects.values_list("key", flat=True)) == ["editor"]
    assert User.objects.filter(username__startswith="memoryhub-sync-bench-").count() == 0
