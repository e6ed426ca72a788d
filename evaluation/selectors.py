"""Reads of stored evaluations. Runs are the hub's, not an account's: any signed-in account may read them."""

from django.db.models import QuerySet, Subquery

from evaluation.models import BackendResult, EvaluationRun


def evaluation_run_list() -> QuerySet[EvaluationRun]:
    """Every stored run, newest first, with its results and who asked for it (three queries per page)."""
    return EvaluationRun.objects.select_related("requested_by").prefetch_related("results").order_by("-started", "-id")


def evaluation_runs_recent(*, limit: int) -> list[EvaluationRun]:
    """The newest `limit` runs with their results, newest first.

    Two queries: the runs with who asked, then their results.
    """
    return list(evaluation_run_list()[:limit])


def latest_run_results() -> list[BackendResult]:
    """The newest run's results in their order, each with its run (one query); [] when no run is stored."""
    newest = EvaluationRun.objects.order_by("-started", "-id").values("pk")[:1]
    return list(BackendResult.objects.filter(run=Subquery(newest)).select_related("run").order_by("position"))
