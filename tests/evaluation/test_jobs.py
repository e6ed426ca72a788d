"""Evaluation runs as the worker's jobs: asked for at once, measured by `manage.py work`, never lost,
never held by two workers, never left running forever."""

import io
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from evaluation import services as evaluation_services
from evaluation.models import EvaluationRun
from evaluation.services import evaluation_request, evaluation_run_claimed
from honcho_double import HonchoDouble
from memories import accounts, leases, services
from memories.models import PROBE_USERNAME, MemoryEntry, MemoryEvent
from memories.services.entries import PROBE_ABANDONED_AFTER


def work_once() -> str:
    out = io.StringIO()
    call_command("work", "--once", "--kind", "evaluation", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def claim(at: timedelta = timedelta()) -> leases.Claim | None:
    now = timezone.now() + at
    return leases.job_claim(EvaluationRun, now=now, started=now)


def claimed(at: timedelta = timedelta()) -> leases.Claim:
    """A claim that must succeed."""
    taken = claim(at)
    assert taken is not None
    return taken


@pytest.mark.django_db(transaction=True)  # the worker renews the run's lease from another connection
def test_a_staff_post_of_1000_ops_against_a_slow_honcho_is_202_without_calling_it_and_the_worker_runs_it(
    staff_api, served_double: HonchoDouble
):
    served_double.latency = 2.5  # each call answers after the 2 s HONCHO_TIMEOUT the tests use

    # null and honcho: the run's own length is the benchmark's business (benchmark_evaluation_request)
    response = staff_api.post("/api/v1/evaluations/", {"backends": ["null", "honcho"], "ops": 1000}, format="json")

    assert response.status_code == 202 and response.json()["status"] == "pending"
    assert served_double.calls == [], "the request does not wait for Honcho: the worker calls it"

    assert "evaluation: run" in work_once()

    run = staff_api.get(response["Location"]).json()
    assert run["status"] == "done"
    null, honcho = run["results"]
    assert (honcho["name"], honcho["ok"], honcho["grade"]) == ("honcho", False, "F")
    assert "did not answer within 2 s" in honcho["reason"]
    assert (null["name"], null["ops"], null["operations"]["put"]["ok"]) == ("null", 1000, True)
    assert not MemoryEntry.objects.filter(owner__username=PROBE_USERNAME).exists()
    connection.close()


@pytest.mark.slow
def test_a_slow_honcho_that_answers_is_measured_as_slow(staff_api, served_double: HonchoDouble, monkeypatch):
    served_double.latency = 0.05
    # the probe's 52 puts alone take 2.6 s at this latency: past a budget of 1 s, it gives no figure
    monkeypatch.setattr(evaluation_services, "RECALL_PROBE_SECONDS", 1.0)
    response = staff_api.post("/api/v1/evaluations/", {"backends": ["honcho"], "ops": 2}, format="json")

    work_once()

    (honcho,) = staff_api.get(response["Location"]).json()["results"]
    assert honcho["ok"] is True and all(operation["ok"] for operation in honcho["operations"].values())
    assert honcho["operations"]["get"]["p50_ms"] >= 50
    assert honcho["recall_at_5"] is None, "the recall probe was cut short at its time budget: no figure"
    assert served_double.sessions("memoryhub") == [], "the probe sessions are removed"


def test_two_workers_never_hold_the_same_run(db):
    run = evaluation_request(backend_names=["null"], ops=1)
    first = claim()
    assert first is not None and (first.pk, first.attempts) == (run.pk, 1)
    assert claim() is None
    assert claim(at=timedelta(seconds=59)) is None


def test_a_run_whose_worker_died_is_taken_again_when_its_lease_ends_and_the_dead_worker_cannot_finish_it(db):
    evaluation_request(backend_names=["null"], ops=1)
    dead = claimed()
    again = claimed(at=leases.JOB_LEASE + timedelta(seconds=1))
    assert again.attempts == 2
    assert leases.job_done(dead) is False
    assert leases.job_done(again) is True
    assert EvaluationRun.objects.get().status == EvaluationRun.Status.DONE


def test_a_renewed_lease_keeps_the_run(db):
    evaluation_request(backend_names=["null"], ops=1)
    held = claimed()
    assert leases.job_renew(held, now=timezone.now() + timedelta(seconds=50))
    assert claim(at=leases.JOB_LEASE + timedelta(seconds=1)) is None
    assert claim(at=timedelta(seconds=50) + leases.JOB_LEASE + timedelta(seconds=1)) is not None


def test_a_run_whose_worker_dies_every_time_ends_failed_not_running_forever(db):
    evaluation_request(backend_names=["null"], ops=1)
    for attempt in range(leases.JOB_MAX_ATTEMPTS):
        assert claim(at=attempt * (leases.JOB_LEASE + timedelta(seconds=1))) is not None
    assert claim(at=leases.JOB_MAX_ATTEMPTS * (leases.JOB_LEASE + timedelta(seconds=1))) is None
    run = EvaluationRun.objects.get()
    assert run.status == EvaluationRun.Status.FAILED
    assert run.error == "the worker stopped during each of 3 attempts (it was killed or lost the database)"
    assert run.finished is not None, "a failed run says when it ended, as a run failed by its worker does"


def test_a_stopping_worker_puts_its_run_back_untried_and_leaves_no_probe_data(db):
    run = evaluation_request(backend_names=["local"], ops=5)
    stopping = threading.Event()
    stopping.set()

    assert evaluation_run_claimed(claimed(), stop=stopping) == EvaluationRun.Status.PENDING

    run.refresh_from_db()
    assert (run.status, run.attempts, run.claim_token) == (EvaluationRun.Status.PENDING, 0, "")
    assert not MemoryEntry.objects.filter(owner__username=PROBE_USERNAME).exists()
    assert "done" in work_once() and EvaluationRun.objects.get().status == EvaluationRun.Status.DONE


def test_the_next_run_removes_the_probe_data_a_worker_killed_mid_run_left(db):
    probe = accounts.probe_account()
    dead, running = evaluation_services.new_probe_uid(), evaluation_services.new_probe_uid()
    for uid in (dead, running):
        services.entry_put(owner=probe, uid=uid, key="k", value="probe data")
    long_ago = timezone.now() - PROBE_ABANDONED_AFTER - timedelta(minutes=1)
    MemoryEntry.objects.filter(uid=dead).update(updated=long_ago)
    MemoryEvent.objects.filter(uid=dead).update(at=long_ago)

    evaluation_request(backend_names=["null"], ops=1)
    assert "done" in work_once()

    # The killed run's data is gone, with its history; another run's, written within the day, is left.
    left = set(MemoryEntry.objects.filter(owner=probe).values_list("uid", flat=True))
    assert left == {running}
    assert not MemoryEvent.objects.filter(owner=probe, uid=dead).exists()


@pytest.mark.django_db(transaction=True)  # the keeper renews from its own thread and connection
def test_the_lease_is_renewed_while_the_run_is_measured():
    evaluation_request(backend_names=["null"], ops=1)
    held = claimed()
    first_lease = EvaluationRun.objects.get().lease_until
    with leases.lease_kept(held, every=timedelta(milliseconds=20)) as keeper:
        assert keeper.renewed.wait(10)
    renewed_lease = EvaluationRun.objects.get().lease_until
    assert first_lease and renewed_lease and renewed_lease > first_lease and not keeper.lost.is_set()
    connection.close()
