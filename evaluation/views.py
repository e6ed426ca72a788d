"""The dashboard's evaluations page: the latest run's grades, charts across runs, and (for staff) a
button that asks for one. The worker measures it; meanwhile the page shows it pending or running
and refreshes itself (a meta refresh: the pages have no scripts), then shows its result, or why it
failed.

Runs are the hub's, not an account's (as GET /api/v1/evaluations/ serves them): every signed-in
account sees them all. Only staff may start one, since it writes and may call Honcho; anyone else
who posts gets 403.
"""

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from evaluation import selectors, services
from evaluation.chart import evaluation_charts, result_latency_ms
from evaluation.models import BackendResult, EvaluationRun
from evaluation.scoring import OPERATIONS
from memories.accounts import request_account
from memories.work import work_status

# Runs drawn in the charts (and read from the database), newest first; older ones are in the API and the admin.
CHART_RUNS = 20
# Runs not done (pending, running or failed) read for the page's notices.
NOT_DONE_RUNS = 5
# How often the page reloads itself while a run is pending or running.
REFRESH_SECONDS = 2


@dataclass(frozen=True)
class OperationCell:
    name: str
    ok: bool
    p50_ms: float | None
    p95_ms: float | None
    error: str


@dataclass(frozen=True)
class ResultRow:
    result: BackendResult
    operations: list[OperationCell]
    latency_ms: float | None


def result_rows(run: EvaluationRun) -> list[ResultRow]:
    """The latest-run table: each backend with its put, get and find side by side."""
    rows = []
    for result in run.results.all():
        operations = [
            OperationCell(
                name=operation,
                ok=getattr(result, f"{operation}_ok"),
                p50_ms=getattr(result, f"{operation}_p50_ms"),
                p95_ms=getattr(result, f"{operation}_p95_ms"),
                error=result.errors.get(operation, ""),
            )
            for operation in OPERATIONS
        ]
        rows.append(ResultRow(result=result, operations=operations, latency_ms=result_latency_ms(result)))
    return rows


@dataclass(frozen=True)
class FigureRow:
    run: EvaluationRun
    result: BackendResult
    latency_ms: float | None


def figure_rows(runs: list[EvaluationRun]) -> list[FigureRow]:
    """The charts' figures as table rows (newest run first), for people who do not see the charts."""
    return [
        FigureRow(run=run, result=result, latency_ms=result_latency_ms(result))
        for run in runs
        for result in run.results.all()
    ]


def _run_now(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("Only staff may run an evaluation.")
    try:
        run = services.evaluation_request(requested_by=request_account(request))
    except services.EvaluationError as error:
        messages.error(request, f"The evaluation did not run: {error}")
    else:
        messages.success(
            request,
            f"Evaluation asked for: {run.ops} puts, gets and finds on {', '.join(run.backends)}, by the worker.",
        )
    return HttpResponseRedirect(reverse("evaluations:list"))


@login_required
@require_http_methods(["GET", "POST"])
def evaluation_list(request: HttpRequest) -> HttpResponse:
    """GET: runs pending or running, the latest run and the charts of the last CHART_RUNS runs.
    POST (staff): ask for one."""
    if request.method == "POST":
        return _run_now(request)
    # One run more than the charts draw, to know whether older runs exist without counting them.
    recent = selectors.evaluation_runs_recent(limit=CHART_RUNS + 1)
    runs = recent[:CHART_RUNS]
    latest = runs[0] if runs else None
    styles, charts = evaluation_charts(runs)
    not_done = selectors.evaluation_runs_not_done(limit=NOT_DONE_RUNS)
    in_progress = [run for run in not_done if run.status != EvaluationRun.Status.FAILED]
    # the newest failed run, unless a run done since has taken its place
    failed = next(
        (run for run in not_done if run.status == EvaluationRun.Status.FAILED and (not latest or run.pk > latest.pk)),
        None,
    )
    context = {
        "in_progress": in_progress,
        "failed": failed,
        # whether a worker is there to run them (one query, only while a run waits)
        "work": work_status() if in_progress else None,
        "refresh_seconds": REFRESH_SECONDS if in_progress else None,
        "latest": latest,
        "rows": result_rows(latest) if latest else [],
        "runs": runs,
        "more_runs": len(recent) > CHART_RUNS,
        "styles": styles,
        "figures": figure_rows(runs),
        "charts": charts,
        "chart_runs": CHART_RUNS,
        "default_ops": services.DEFAULT_OPS,
        "default_backends": services.default_backend_names(),
    }
    return render(request, "evaluation/evaluation_list.html", context)
