"""Reads of stored evaluations. Runs are the hub's, not an account's: any signed-in account may read them."""

from django.db.models import QuerySet, Subquery

from evaluation.models import BackendResult, EvaluationRun


def evaluation_run_list() -> QuerySet[EvaluationRun]:
    """Every stored run (pending, running, done or failed), newest first, with its results and who asked
    for it (three queries per page)."""
    return (
        EvaluationRun.objects.select_related("requested_by").prefetch_related("results").order_by("-requested", "-id")
    )


def evaluation_runs_recent(*, limit: int) -> list[EvaluationRun]:
    """The newest `limit` done runs with their results, newest first (runs with who asked, then their results:
    two queries)."""
    return list(evaluation_run_list().filter(status=EvaluationRun.Status.DONE)[:limit])


def evaluation_runs_not_done(*, limit: int) -> list[EvaluationRun]:
    """The newest `limit` runs that are pending, running or failed, with who asked (one query)."""
    return list(
        EvaluationRun.objects.exclude(status=EvaluationRun.Status.DONE)
        .select_related("requested_by")
        .order_by("-requested", "-id")[:limit]
    )


def latest_run_results() -> list[BackendResult]:
    """The newest done run's results in their order, each with its run (one query); [] when none is stored."""
    newest = (
        EvaluationRun.objects.filter(status=EvaluationRun.Status.DONE).order_by("-requested", "-id").values("pk")[:1]
    )
    return list(BackendResult.objects.filter(run=Subquery(newest)).select_related("run").order_by("position"))
