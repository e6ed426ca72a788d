"""Reads of stored evaluations. Runs are the hub's, not an account's: any signed-in account may read them."""

from django.db.models import QuerySet

from evaluation.models import EvaluationRun


def evaluation_run_list() -> QuerySet[EvaluationRun]:
    """Every stored run, newest first, with its results and who asked for it (three queries per page)."""
    return EvaluationRun.objects.select_related("requested_by").prefetch_related("results").order_by("-started", "-id")
