"""The worker drains the outbox to Honcho (the double, through the real SDK) and loses nothing."""

import threading
from itertools import pairwise
from random import Random

import pytest

from honcho_double import Fault
from memories import outbox, services
from memories.backends.honcho import peer_id, record_metadata, value_hash
from memories.models import SyncTask
from memories.sync.worker import Backoff, honcho_record
from tests.support.sync import entries_by_session, sessions_by_id, waiting

pytestmark = pytest.mark.usefixtures("sync_on")


def assert_honcho_mirrors_the_hub(double) -> None:
    """Honcho holds one session per entry, holding exactly the entry, and no value's message twice in a row."""
    double.purge()
    sessions = sessions_by_id(double)
    entries = entries_by_session()
    assert set(sessions) == set(entries)
    for session_id, entry in entries.items():
        assert sessions[session_id]["metadata"] == record_metadata(honcho_record(entry))
        hashes = [message["metadata"]["mh_hash"] for message in sessions[session_id]["messages"]]
        assert hashes[-1] == value_hash(entry.value)
        assert all(earlier != later for earlier, later in pairwise(hashes))
        assert len(hashes) <= entry.version


def test_a_drain_pushes_puts_updates_and_deletes(owner, honcho_double, worker):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="editor", value="helix", meta={"since": 2024})
    services.entry_put(owner=owner, uid="alice", key="shell", value="fish")
    services.entry_put(owner=owner, uid="alice", key="gone", value="soon")
    services.entry_delete(owner=owner, uid="alice", key="gone")

    report = worker.drain()

    assert (report.pushed, report.failed) == (3, 0)
    assert waiting() == 0 and waiting(SyncTask.Status.DONE) == 3
    assert_honcho_mirrors_the_hub(honcho_double)
    # the two versions of "editor" were collapsed: only its newest value was sent
    assert worker.drain().pushed == 0


@pytest.mark.slow
def test_a_thousand_writes_through_30_percent_failures_arrive_whole_and_once(
    owner, stranger, honcho_double, make_worker, clock
):
    worker = make_worker()
    honcho_double.faults.fail(0.3, kinds=(Fault.SERVER_ERROR, Fault.TIMEOUT, Fault.DROPPED_CONNECTION), seed=11)
    writes = Random(3)
    accounts = [owner, stranger]
    for number in range(1000):
        account = accounts[number % 2]
        uid, key = f"user{writes.randrange(6)}", f"key{writes.randrange(20)}"
        roll = writes.random()
        if number == 500:
            services.user_forget(owner=owner, uid="user0")
        elif roll < 0.2:
            services.entry_delete(owner=account, uid=uid, key=key)
        elif roll < 0.3:
            services.entry_put(
                owner=account, uid=uid, key=key, value=f"value {number}", meta={"n": number}, kind="fact"
            )
        else:
            services.entry_put(owner=account, uid=uid, key=key, value=f"value {number}")
        if number % 40 == 39:
            worker.drain()
            clock.advance(hours=1)
    injected_during_writes = honcho_double.faults.injected

    honcho_double.faults.reset()
    for _ in range(20):
        if not waiting():
            break
        worker.drain()
        clock.advance(hours=1)

    assert injected_during_writes > 300
    assert waiting() == 0 and waiting(SyncTask.Status.FAILED) == 0
    assert_honcho_mirrors_the_hub(honcho_double)


def test_with_honcho_down_every_change_stays_pending_and_an_outage_costs_few_calls(owner, honcho_double, worker, clock):
    honcho_double.faults.unreachable = True
    for number in range(60):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value="v")
    services.entry_delete(owner=owner, uid="alice", key="k0")
    for _ in range(5):
        report = worker.drain()
        assert report.stopped_early and report.pushed == 0
        clock.advance(hours=1)

    assert waiting() == 60 and waiting(SyncTask.Status.FAILED) == 0
    assert len(honcho_double.calls) == 5 * 5  # five tries per drain, then the drain stops
    assert "could not reach Honcho" in SyncTask.objects.exclude(last_error="").first().last_error

    honcho_double.faults.reset()
    clock.advance(hours=1)
    assert worker.drain().pushed == 60
    assert_honcho_mirrors_the_hub(honcho_double)


def test_a_refused_api_key_parks_each_task_once_with_its_reason_and_no_retry_storm(owner, honcho_double, worker, clock):
    honcho_double.faults.unauthorized = True
    for number in range(10):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value="v")

    report = worker.drain()
    clock.advance(days=1)
    again = worker.drain()

    assert (report.parked, again.pushed + again.failed) == (10, 0)
    assert len(honcho_double.calls) == 10
    failed = SyncTask.objects.filter(status=SyncTask.Status.FAILED)
    assert failed.count() == 10
    assert all("refused the API key (401)" in task.last_error for task in failed)

    honcho_double.faults.reset()
    assert outbox.tasks_retry_failed(now=clock()) == 10
    assert worker.drain().pushed == 10
    assert_honcho_mirrors_the_hub(honcho_double)


def test_rate_limiting_waits_at_least_the_retry_after(owner, honcho_double, worker, clock):
    honcho_double.retry_after = 120
    honcho_double.faults.fail_next.append(Fault.RATE_LIMITED)
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")

    before = clock()
    assert worker.drain().retrying == 1
    task = SyncTask.objects.get()
    assert (task.next_attempt_at - before).total_seconds() >= 120
    clock.advance(seconds=60)
    assert worker.drain().pushed == 0
    clock.advance(seconds=62)
    assert worker.drain().pushed == 1


def test_retries_back_off_exponentially_with_jitter_up_to_a_cap():
    backoff = Backoff(base=2, cap=900, random=Random(1))
    delays = [backoff.delay(attempts) for attempts in range(1, 15)]
    assert all(
        ceiling / 2 <= delay <= ceiling
        for delay, ceiling in zip(delays, [min(900, 2 * 2**n) for n in range(14)], strict=True)
    )
    assert len(set(delays)) == len(delays)
    assert backoff.delay(1, retry_after=30) >= 30


def test_after_the_last_attempt_a_task_is_parked_with_why(owner, honcho_double, make_worker, clock):
    worker = make_worker(max_attempts=3)
    honcho_double.faults.fail(1.0, kinds=(Fault.SERVER_ERROR,))
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    for _ in range(3):
        worker.drain()
        clock.advance(hours=1)
    task = SyncTask.objects.get()
    assert (task.status, task.attempts) == ("failed", 3)
    assert task.last_error.startswith("gave up after 3 attempts: ")


def test_a_change_made_during_a_push_is_pushed_next_time(owner, honcho_double, worker, clock):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    (claimed,) = outbox.tasks_claim(limit=10, lease=worker.lease, now=clock())
    worker.push(claimed)
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")  # lands while the push is in flight

    assert outbox.task_done(claimed, now=clock()) is False
    assert waiting() == 1
    assert worker.drain().pushed == 1
    assert_honcho_mirrors_the_hub(honcho_double)


def test_a_claimed_task_is_not_claimed_again_until_its_lease_ends(owner, worker, clock):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    assert len(outbox.tasks_claim(limit=10, lease=worker.lease, now=clock())) == 1
    assert outbox.tasks_claim(limit=10, lease=worker.lease, now=clock()) == []
    clock.advance(seconds=worker.lease.total_seconds() + 1)  # that worker died mid-push
    assert len(outbox.tasks_claim(limit=10, lease=worker.lease, now=clock())) == 1


def test_entries_of_different_accounts_never_share_a_honcho_peer(owner, stranger, honcho_double, worker):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=stranger, uid="alice", key="editor", value="emacs")
    worker.drain()

    sessions = list(sessions_by_id(honcho_double).values())
    authors = {
        session["metadata"]["mh_value"]: {message["peer_id"] for message in session["messages"]} for session in sessions
    }
    assert authors == {"vim": {peer_id(owner.pk, "alice")}, "emacs": {peer_id(stranger.pk, "alice")}}
    assert peer_id(owner.pk, "alice") != peer_id(stranger.pk, "alice")


def test_a_task_another_worker_took_after_the_lease_ran_out_is_left_to_it(owner, honcho_double, worker, clock):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    (slow,) = outbox.tasks_claim(limit=10, lease=worker.lease, now=clock())
    clock.advance(seconds=worker.lease.total_seconds() + 1)  # this pass was slow: its lease ran out
    (taken,) = outbox.tasks_claim(limit=10, lease=worker.lease, now=clock())

    assert outbox.task_hold(slow, lease=worker.lease, now=clock()) is False
    assert outbox.task_hold(taken, lease=worker.lease, now=clock()) is True


def test_a_new_change_to_an_entry_waiting_out_a_backoff_is_due_at_once(owner, honcho_double, worker, clock):
    honcho_double.faults.fail_next.append(Fault.SERVER_ERROR)
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    assert worker.drain().retrying == 1
    assert worker.drain().pushed == 0  # waiting out its backoff

    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    task = SyncTask.objects.get()
    assert (task.attempts, task.next_attempt_at <= clock()) == (0, True)
    assert worker.drain().pushed == 1
    assert_honcho_mirrors_the_hub(honcho_double)


def test_the_oldest_pending_change_keeps_its_age_until_it_is_pushed(owner, worker, clock):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    first = SyncTask.objects.get()
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    again = SyncTask.objects.get()
    assert (again.pending_since, again.next_attempt_at) == (first.pending_since, first.next_attempt_at)

    worker.drain()
    services.entry_put(owner=owner, uid="alice", key="editor", value="helix")
    assert SyncTask.objects.get().pending_since > first.pending_since


def test_a_drain_asked_to_stop_finishes_its_batch_and_leaves_the_rest_queued(owner, make_worker):
    for number in range(12):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value="v")
    stop = threading.Event()
    worker = make_worker(batch_size=5)
    original_push = worker.push

    def push_then_ask_to_stop(task) -> None:
        original_push(task)
        stop.set()  # SIGTERM arrives during the first batch

    worker.push = push_then_ask_to_stop
    assert worker.drain(stop).pushed == 5
    assert waiting() == 7
