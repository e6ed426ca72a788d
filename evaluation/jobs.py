"""Evaluation runs as background work: the kind `manage.py work` finds in settings.MEMORYHUB_JOB_KINDS."""

import threading

from django.db.models import QuerySet
from django.utils import timezone

from evaluation.models import EvaluationRun
from evaluation.services import evaluation_run_claimed
from memories import leases
from memories.work import JobKind, WorkReport

# How long an idle evaluation lane waits before looking for a pending run (the longest a new run waits).
POLL_SECONDS = 1.0


class EvaluationRunner:
    """Measures pending runs, one at a time, oldest first."""

    def run_due(self, stop: threading.Event) -> WorkReport:
        now = timezone.now()
        claim = leases.job_claim(EvaluationRun, now=now, started=now)
        if claim is None:
            return WorkReport()
        status = evaluation_run_claimed(claim, stop=stop)
        if status == EvaluationRun.Status.DONE:
            return WorkReport(done=1, summary=f"run {claim.pk} done")
        if status == EvaluationRun.Status.FAILED:
            error = EvaluationRun.objects.filter(pk=claim.pk).values_list("error", flat=True).first()
            return WorkReport(failed=1, summary=f"run {claim.pk} failed: {error}")
        if status == EvaluationRun.Status.PENDING:
            return WorkReport(summary=f"run {claim.pk} put back: the worker is stopping")
        return WorkReport(summary=f"run {claim.pk} was taken by another worker")

    def close(self) -> None:
        pass


def _waiting() -> QuerySet:
    return EvaluationRun.objects.filter(status=EvaluationRun.Status.PENDING)


evaluation_job = JobKind(
    name="evaluation", waiting=_waiting, runner=EvaluationRunner, poll_seconds=lambda: POLL_SECONDS
)
