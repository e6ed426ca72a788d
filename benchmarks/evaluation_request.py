"""What `manage.py benchmark_evaluation_request` measures: a staff POST of an evaluation answering at
once (202) while the run itself, against a slow Honcho, is measured by the worker."""

import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.test import override_settings
from rest_framework.test import APIClient

from benchmarks.timing import Samples, timed
from evaluation.jobs import evaluation_job
from evaluation.models import EvaluationRun
from honcho_double import HonchoDouble
from memories.accounts import account_create
from memories.work import Worker


@dataclass
class EvaluationRequestReport:
    posts: Samples
    statuses: set[int]
    run_seconds: float
    run_status: str
    ops: int
    latency_ms: float


def evaluation_request_measure(*, ops: int, latency: float, posts: int) -> EvaluationRequestReport:
    """POST `posts` evaluations of `ops` operations on null, local and a Honcho double answering `latency`
    seconds late; time each answer; then time the worker measuring the last one. The throwaway staff
    account and its runs are removed afterwards."""
    if EvaluationRun.objects.filter(status__in=[EvaluationRun.Status.PENDING, EvaluationRun.Status.RUNNING]).exists():
        raise RuntimeError("runs are pending in this hub: the benchmark's worker would measure them too")
    double = HonchoDouble(latency=latency)
    account, token = account_create(username=f"memoryhub-bench-{secrets.token_hex(4)}", staff=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    samples, statuses = Samples(), set()
    try:
        with double.running() as base_url, override_settings(HONCHO_URL=base_url, MEMORYHUB_RATE_LIMIT=""):
            body = {"backends": ["null", "local", "honcho"], "ops": ops}
            for _ in range(posts):
                response, seconds = timed(
                    lambda: client.post("/api/v1/evaluations/", body, format="json", HTTP_HOST="127.0.0.1")
                )
                samples.add(seconds)
                statuses.add(response.status_code)
            # the worker measures the newest; the others are not needed
            newest = EvaluationRun.objects.filter(requested_by=account).latest("pk")
            EvaluationRun.objects.filter(requested_by=account).exclude(pk=newest.pk).delete()
            _, run_seconds = timed(lambda: Worker([evaluation_job], out=lambda line: None).run_once())
            newest.refresh_from_db()
            return EvaluationRequestReport(samples, statuses, run_seconds, newest.status, ops, latency * 1000)
    finally:
        EvaluationRun.objects.filter(requested_by=account).delete()
        User.objects.filter(pk=account.pk).delete()
