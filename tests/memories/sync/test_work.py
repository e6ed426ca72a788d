"""`manage.py work`: every kind of background work in one process, once or in lanes, and what the hub
knows of it (the heartbeat and the waiting work)."""

import io
import os
import signal
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from evaluation.models import EvaluationRun
from evaluation.services import evaluation_request
from honcho_double import HonchoDouble
from memories import selectors, services
from memories.embeddings import get_provider
from memories.models import SyncTask, WorkerHeartbeat
from memories.search.vectors import semantic_ranked
from memories.work import WORKER_SEEN_WITHIN, Worker, heartbeat_end, job_kinds, run_until_signalled, work_status
from tests.support.sync import waiting


def work(*arguments: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("work", *arguments, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def wait_for(condition, seconds: float = 20.0) -> bool:
    """Poll condition until it holds or the time is up (for work done by other threads)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.usefixtures("sync_on")
def test_once_drains_the_outbox_and_runs_pending_evaluations_then_exits(owner, served_double):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="shell", value="fish")
    run = evaluation_request(backend_names=["local"], ops=2)

    out, _ = work("--once")

    lines = out.splitlines()
    assert lines[0] == "sync: pushed 2, failed 0 (0 to retry, 0 parked); outbox now: 0 pending, 0 failed"
    assert lines[1] == "embeddings: embedded 2 entries in 1 batches"
    assert lines[2] == f"evaluation: run {run.pk} done"
    assert lines[-1] == (
        "work: sync 2 done, 0 failed; embeddings 2 done, 0 failed; evaluation 1 done, 0 failed; expiry 0 done, 0 failed"
    )
    assert len(served_double.sessions("memoryhub-tests")) == 2
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.DONE and run.results.count() == 1
    status = work_status()
    assert status.worker_seen and status.waiting == {"sync": 0, "embeddings": 0, "evaluation": 0, "expiry": 0}


def test_without_honcho_the_worker_says_so_and_does_the_rest(db, settings):
    settings.HONCHO_URL, settings.HONCHO_API_KEY = "", ""
    evaluation_request(backend_names=["null"], ops=1)
    out, err = work("--once")
    assert err == "work: no sync: Honcho is not configured (HONCHO_URL or HONCHO_API_KEY)\n"
    assert (
        out.splitlines()[-1]
        == "work: embeddings 0 done, 0 failed; evaluation 1 done, 0 failed; expiry 0 done, 0 failed"
    )
    with pytest.raises(CommandError, match="no kind of work can run here"):
        work("--once", "--kind", "sync")


def test_an_unknown_kind_is_refused_naming_the_kinds(db):
    with pytest.raises(CommandError, match="unknown kind of work 'embed': choose from sync, embeddings, evaluation"):
        work("--once", "--kind", "embed")


def test_the_kinds_come_from_the_settings(settings):
    assert settings.MEMORYHUB_JOB_KINDS == [
        "memories.jobs.sync_job",
        "memories.jobs.embedding_job",
        "evaluation.jobs.evaluation_job",
        "memories.jobs.expiry_job",
    ]
    settings.MEMORYHUB_JOB_KINDS = ["evaluation.jobs.evaluation_job"]
    assert [kind.name for kind in job_kinds()] == ["evaluation"]


@pytest.mark.usefixtures("sync_on")
def test_the_status_counts_waiting_work_and_a_worker_seen_within_the_minute_in_one_query(
    owner, django_assert_num_queries
):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    evaluation_request(backend_names=["null"], ops=1)
    evaluation_request(backend_names=["null"], ops=1)
    with django_assert_num_queries(1):
        status = work_status()
    assert (status.worker_seen, status.last_seen, status.waiting) == (
        False,
        None,
        {"sync": 1, "embeddings": 1, "evaluation": 2, "expiry": 0},
    )

    Worker(job_kinds(), name="elsewhere:1").beat()
    assert work_status().worker_seen
    assert not work_status(now=timezone.now() + WORKER_SEEN_WITHIN + timedelta(seconds=1)).worker_seen


def test_a_worker_that_stopped_is_not_there_and_the_overview_says_when_it_was_last_seen(owner_client):
    Worker(job_kinds(), name="stopping:1").beat()
    heartbeat_end(name="stopping:1")

    status = work_status()
    page = owner_client.get("/").content.decode()

    assert not status.worker_seen and status.last_seen is not None
    assert "A worker was last seen" in page and "No worker has been seen yet" not in page
    assert "worker running" not in page
    Worker(job_kinds(), name="stopping:1").beat()  # started again under the same name: there again
    assert work_status().worker_seen


@pytest.mark.django_db(transaction=True)  # lanes work on their own connections, as in the real process
@pytest.mark.usefixtures("sync_on")
def test_sync_keeps_flowing_while_a_long_evaluation_runs_and_sigterm_puts_the_evaluation_back(
    owner, served_double: HonchoDouble
):
    served_double.latency = 0.02  # every call to Honcho: about 20 ms more
    # about 400 calls to Honcho: several seconds of work for the evaluation lane
    run = evaluation_request(backend_names=["honcho"], ops=80)
    worker = Worker(job_kinds(), out=lambda line: None, poll_seconds=0.05, name="lanes-test")
    stopped = threading.Event()
    loop = threading.Thread(target=worker.run_loop, args=(stopped,))
    loop.start()
    try:
        assert wait_for(lambda: EvaluationRun.objects.get(pk=run.pk).status == EvaluationRun.Status.RUNNING)
        services.entry_put(owner=owner, uid="alice", key="editor", value="vim")

        assert wait_for(lambda: waiting() == 0 and SyncTask.objects.filter(status=SyncTask.Status.DONE).exists())
        assert EvaluationRun.objects.get(pk=run.pk).status == EvaluationRun.Status.RUNNING, (
            "the change was pushed while the evaluation was still measuring"
        )
        assert WorkerHeartbeat.objects.filter(name="lanes-test").exists()
    finally:
        stopped.set()
        loop.join()
    run.refresh_from_db()
    assert (run.status, run.attempts) == (EvaluationRun.Status.PENDING, 0), "put back for the next worker"
    assert not WorkerHeartbeat.objects.filter(stopped_at=None).exists()
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_sigterm_stops_the_loop_between_jobs(settings):
    settings.HONCHO_URL, settings.HONCHO_API_KEY = "", ""
    worker = Worker(job_kinds(["evaluation"]), out=lambda line: None, poll_seconds=0.05, name="sigterm-test")
    threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGTERM)).start()
    previous = signal.getsignal(signal.SIGTERM)

    run_until_signalled(worker)  # returns once SIGTERM arrives

    assert signal.getsignal(signal.SIGTERM) is previous
    assert not WorkerHeartbeat.objects.filter(stopped_at=None).exists()
    connection.close()


def test_the_worker_embeds_what_was_written_so_it_is_found_by_meaning(owner, settings):
    settings.MEMORYHUB_EMBEDDINGS = "local"
    services.entry_put(owner=owner, uid="alice", key="allergy", value="is allergic to peanuts")
    services.entry_put(owner=owner, uid="alice", key="editor", value="writes code in Neovim")
    assert work_status().waiting["embeddings"] == 2

    out, _ = work("--once", "--kind", "embeddings")

    assert out.splitlines()[0] == "embeddings: embedded 2 entries in 1 batches"
    assert work_status().waiting["embeddings"] == 0
    provider = get_provider()
    (nearest, _), *_ = semantic_ranked(
        owner=owner,
        uid="alice",
        model=provider.name,
        query_vector=provider.embed(["which nuts must she avoid"])[0],
        limit=2,
    )
    assert nearest == selectors.entry_get(owner=owner, uid="alice", key="allergy").pk


def test_with_embeddings_off_the_embeddings_lane_says_so(db, settings):
    settings.MEMORYHUB_EMBEDDINGS = "off"

    with pytest.raises(CommandError, match="no kind of work can run here"):
        work("--once", "--kind", "embeddings")
