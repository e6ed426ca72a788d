"""The dashboard's evaluations page and the overview's latest-evaluation panel: what they show, to
whom, who may run an evaluation from there, and in how many queries."""

import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from evaluation.models import BackendResult, EvaluationRun
from evaluation.services import evaluation_request, evaluation_run
from evaluation.views import CHART_RUNS
from memories import leases
from memories.models import PROBE_USERNAME
from memories.work import Worker
from tests.support.honcho import closed_port_url

SCRIPT = "<script>alert(1)</script>"


def stored_run(
    *, minutes_ago: int, results: list[dict], recommendation: str = "Best: local (100pts, A)"
) -> EvaluationRun:
    """A run as evaluation.services stores one, with chosen figures (so a chart's points are known)."""
    started = timezone.now() - timedelta(minutes=minutes_ago)
    run = EvaluationRun.objects.create(
        status=EvaluationRun.Status.DONE,
        requested=started,
        started=started,
        finished=started,
        ops=3,
        backends=[figures["name"] for figures in results],
        recommendation=recommendation,
    )
    for position, figures in enumerate(results):
        available = figures.get("available", True)
        latencies = {
            f"{operation}_{kind}_ms": figures.get("ms", 1.0)
            for operation in ("put", "get", "find")
            for kind in ("p50", "p95")
        }
        BackendResult.objects.create(
            run=run,
            position=position,
            name=figures["name"],
            available=available,
            cloud=figures.get("cloud", False),
            reason=figures.get("reason", "answers"),
            put_ok=available,
            get_ok=available,
            find_ok=available,
            score=figures.get("score", 100 if available else 0),
            grade=figures.get("grade", "A" if available else "F"),
            **(latencies if available else {}),
        )
    return run


def chart(page: str, slug: str) -> str:
    """The markup of one chart's <svg>."""
    match = re.search(rf'<svg [^>]*id="{slug}".*?</svg>', page, re.DOTALL)
    assert match, f"no {slug} on the page"
    return match.group(0)


def points_of(svg: str, backend: str) -> int:
    series = re.search(rf'<g class="series" data-backend="{re.escape(backend)}".*?</g>', svg, re.DOTALL)
    return series.group(0).count('class="point"') if series else 0


def test_the_page_asks_an_anonymous_visitor_to_log_in_and_refuses_their_post(db):
    assert Client().get("/evaluations/")["Location"].startswith("/login/?next=")
    assert Client().post("/evaluations/")["Location"].startswith("/login/?next=")
    assert not EvaluationRun.objects.exists()


def test_with_no_run_the_page_says_how_to_run_one(owner_client):
    page = owner_client.get("/evaluations/").content.decode()
    assert "No evaluation yet." in page and "./hub evaluate" in page
    assert "Run an evaluation now" not in page and "<svg" not in page


def test_staff_see_a_button_that_asks_for_a_run_and_the_page_shows_it_pending_then_done(staff_client, staff):
    assert "Run an evaluation now" in staff_client.get("/evaluations/").content.decode()
    response = staff_client.post("/evaluations/", follow=True)
    run = EvaluationRun.objects.get()
    assert (run.status, run.requested_by, run.backends) == (EvaluationRun.Status.PENDING, staff, ["null", "local"])
    page = response.content.decode()
    assert "Evaluation asked for: 20 puts, gets and finds on null, local, by the worker." in page
    assert f'Run {run.pk}: <strong class="run-status">pending</strong>' in page
    assert '<meta http-equiv="refresh" content="2">' in page
    assert "No worker has been seen in the last minute" in page

    call_command("work", "--once", "--kind", "evaluation", stdout=io.StringIO())

    page = staff_client.get("/evaluations/").content.decode()
    assert 'http-equiv="refresh"' not in page and "In progress" not in page
    assert re.search(r"<strong>Best: local \(\d+pts, A\)</strong>", page) and "run by staffer" in page
    assert points_of(chart(page, "score-chart"), "local") == 1


def test_a_running_run_with_a_worker_about_says_it_is_measured(staff_client, staff):
    run = evaluation_request(requested_by=staff)
    leases.job_claim(EvaluationRun, now=timezone.now(), started=timezone.now())
    Worker([], name="test-worker").beat()
    page = staff_client.get("/evaluations/").content.decode()
    assert f'Run {run.pk}: <strong class="run-status">running</strong> since' in page
    assert "The worker measures it; this page reloads every 2 seconds" in page
    assert "No worker has been seen" not in page


def test_an_account_that_is_not_staff_gets_403_when_it_posts(owner_client):
    assert owner_client.post("/evaluations/").status_code == 403
    assert not EvaluationRun.objects.exists()


def test_the_run_button_needs_the_csrf_token(staff):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(staff)
    assert browser.post("/evaluations/").status_code == 403
    assert not EvaluationRun.objects.exists()


def test_an_evaluation_that_cannot_run_is_failed_with_its_reason_on_the_page(staff_client):
    get_user_model().objects.create_user(username=PROBE_USERNAME, password="a-real-person-1")
    staff_client.post("/evaluations/")
    with pytest.raises(CommandError, match="1 job"):
        call_command("work", "--once", "--kind", "evaluation", stdout=io.StringIO())
    run = EvaluationRun.objects.get()
    assert run.status == EvaluationRun.Status.FAILED and "reserved for evaluation probes" in run.error
    page = staff_client.get("/evaluations/").content.decode()
    assert "The latest evaluation failed" in page and "reserved for evaluation probes" in page
    assert "No evaluation has finished yet." in page and 'http-equiv="refresh"' not in page
    assert not run.results.exists()


@pytest.mark.slow
def test_every_account_sees_the_latest_runs_table_and_recommendation(stranger_client, staff):
    run = evaluation_run(backend_names=["null", "local"], ops=2, requested_by=staff).run
    local_score = run.results.get(name="local").score  # the points for speed depend on the machine
    page = stranger_client.get("/evaluations/").content.decode()
    assert f"<strong>Best: local ({local_score}pts, A)</strong>" in page and "run by a staff account" in page
    assert "staffer" not in page  # staff usernames are for staff
    null_row = re.search(r'<th scope="row" class="backend">null</th>.*?</tr>', page, re.DOTALL).group(0)
    assert null_row.count("FAIL") == 2 and '<span class="grade grade-B">B</span>' in null_row
    assert "get: get did not return what put stored" in null_row
    local_row = re.search(r'<th scope="row" class="backend">local</th>.*?</tr>', page, re.DOTALL).group(0)
    assert (
        local_row.count("<span>ok\n") == 3
        and f">{local_score}<" in local_row
        and '<span class="grade grade-A">A</span>' in local_row
    )
    assert re.search(
        r'data-label="Put \(p50 / p95 ms\)"><span>ok\s+<span class="timing">[\d.]+ / [\d.]+</span>', local_row
    )


@pytest.mark.slow
def test_an_unreachable_backend_is_graded_f_with_its_reason_and_has_no_latency_point(owner_client, settings):
    settings.HONCHO_URL = closed_port_url()
    evaluation_run(backend_names=["local", "honcho"], ops=1)
    page = owner_client.get("/evaluations/").content.decode()
    honcho_row = re.search(r'<th scope="row" class="backend">honcho</th>.*?</tr>', page, re.DOTALL).group(0)
    assert '<strong class="fail">no</strong>' in honcho_row and '<span class="grade grade-F">F</span>' in honcho_row
    assert '<span class="badge warn">cloud</span>' in honcho_row
    assert points_of(chart(page, "score-chart"), "honcho") == 1
    assert points_of(chart(page, "latency-chart"), "honcho") == 0
    assert points_of(chart(page, "latency-chart"), "local") == 1


def test_the_charts_draw_a_point_for_each_run_of_each_backend(owner_client):
    for minutes_ago, local_score in [(30, 80), (20, 90), (10, 100)]:
        stored_run(
            minutes_ago=minutes_ago,
            results=[
                {"name": "null", "score": 75, "grade": "B", "ms": 0.002},
                {"name": "local", "score": local_score, "ms": 2.0},
            ],
        )
    page = owner_client.get("/evaluations/").content.decode()
    scores, latencies = chart(page, "score-chart"), chart(page, "latency-chart")
    for svg in (scores, latencies):
        assert points_of(svg, "null") == 3 and points_of(svg, "local") == 3
    assert '<title id="score-chart-title">Score per backend across runs</title>' in scores
    assert "Latest: null 75 points, grade B; local 100 points, grade A." in scores
    assert "<title>local, " in scores and ": 80 points, grade A</title>" in scores
    # Scores rise from left to right: the newest point sits highest (smallest y), on the right.
    line = re.search(r'data-backend="local".*?<polyline points="([^"]+)"', scores, re.DOTALL).group(1)
    (x1, y1), (x2, y2), (x3, y3) = [tuple(map(float, pair.split(","))) for pair in line.split()]
    assert x1 < x2 < x3 and y1 > y2 > y3
    # The logarithmic latency axis spans the figures: 1 µs to 10 ms.
    assert (
        ">0.001</text>" in latencies
        and ">10</text>" in latencies
        and ">100</text>" not in latencies
        and "ms (put 2.00, get 2.00, find 2.00)</title>" in latencies
    )
    assert page.count("<tr>") >= 1 + 6 and "The charts' figures as a table" in page


def test_backend_names_are_escaped_in_the_charts_and_tables(owner_client):
    stored_run(minutes_ago=5, results=[{"name": SCRIPT, "reason": SCRIPT}])
    page = owner_client.get("/evaluations/").content.decode()
    assert "<script" not in page
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f'data-backend="{escaped}"' in chart(page, "score-chart")
    assert f"<title>{escaped}, " in chart(page, "latency-chart")
    assert page.count(escaped) >= 6


def test_the_charts_show_the_latest_runs_only(owner_client):
    for minutes_ago in range(CHART_RUNS + 5):
        stored_run(minutes_ago=minutes_ago, results=[{"name": "local"}])
    page = owner_client.get("/evaluations/").content.decode()
    assert points_of(chart(page, "score-chart"), "local") == CHART_RUNS
    assert f"The latest {CHART_RUNS} runs" in page and "Older runs are in the API" in page


def test_the_page_renders_in_five_queries_however_many_runs(owner_client, django_assert_num_queries):
    for minutes_ago in range(CHART_RUNS + 5):
        stored_run(minutes_ago=minutes_ago, results=[{"name": "null", "score": 75, "grade": "B"}, {"name": "local"}])
    # session, account, the newest done runs with who asked for them, their results, the runs not done
    with django_assert_num_queries(5):
        assert owner_client.get("/evaluations/").status_code == 200


def test_a_page_with_a_pending_run_costs_one_query_more(owner_client, django_assert_num_queries):
    stored_run(minutes_ago=1, results=[{"name": "local"}])
    evaluation_request(backend_names=["local"])
    # session, account, the done runs, their results, the runs not done, and the worker's status
    with django_assert_num_queries(6):
        assert "In progress" in owner_client.get("/evaluations/").content.decode()


def test_the_empty_page_renders_in_four_queries(owner_client, django_assert_num_queries):
    # session, account, the (no) done runs, the (no) runs not done
    with django_assert_num_queries(4):
        assert owner_client.get("/evaluations/").status_code == 200


def test_every_page_links_to_the_evaluations(owner_client):
    assert '<a href="/evaluations/">Evaluations</a>' in owner_client.get("/users/").content.decode()


def test_the_overview_shows_the_latest_evaluations_grade(owner_client):
    assert "No evaluation yet: run <code>./hub evaluate</code>" in owner_client.get("/").content.decode()
    stored_run(
        minutes_ago=20, results=[{"name": "local", "score": 60, "grade": "B"}], recommendation="Best: local (60pts, B)"
    )
    stored_run(
        minutes_ago=5,
        results=[
            {"name": "null", "score": 75, "grade": "B"},
            {"name": "local", "score": 100},
            {"name": "honcho", "available": False, "cloud": True},
        ],
    )
    panel = re.search(
        r'<section class="card" aria-labelledby="evaluation-title">.*?</section>',
        owner_client.get("/").content.decode(),
        re.DOTALL,
    ).group(0)
    assert '<span class="grade grade-A big">A</span>\n    <strong>local</strong>, 100 points' in panel
    assert "Best: local (100pts, A)" in panel and "(60pts, B)" not in panel
    assert (
        'honcho <span class="grade grade-F">F</span>' in panel and 'null <span class="grade grade-B">B</span>' in panel
    )


def test_the_overview_panel_names_no_backend_when_only_null_answered(owner_client):
    stored_run(minutes_ago=1, results=[{"name": "null", "score": 75, "grade": "B"}], recommendation="None")
    assert "No backend other than null was available." in owner_client.get("/").content.decode()


@pytest.mark.parametrize("with_run", [False, True])
def test_the_evaluation_panel_costs_the_overview_one_query(owner_client, settings, django_assert_num_queries, with_run):
    settings.MEMORYHUB_OVERVIEW_PANELS = ["evaluation.panels.latest_evaluation_panel"]
    if with_run:
        stored_run(minutes_ago=1, results=[{"name": "null", "score": 75, "grade": "B"}, {"name": "local"}])
    # the overview's six (session, account, entry and user counts, kinds, changes, the backend's SELECT 1)
    # and the newest run's results with their run
    with django_assert_num_queries(7):
        assert "Latest evaluation" in owner_client.get("/").content.decode()


def test_the_evaluation_panel_is_in_the_settings(settings):
    assert "evaluation.panels.latest_evaluation_panel" in settings.MEMORYHUB_OVERVIEW_PANELS


def test_one_run_is_drawn_in_the_middle_with_its_time_below(owner_client):
    run = stored_run(minutes_ago=1, results=[{"name": "local", "ms": 0.5}])
    scores = chart(owner_client.get("/evaluations/").content.decode(), "score-chart")
    assert points_of(scores, "local") == 1 and "<polyline" not in scores
    assert 'text-anchor="middle">' in scores and "Score out of 100 of each backend over one run, on " in scores
    assert timezone.localtime(run.started).strftime("%H:%M") in scores


def test_the_evaluations_page_loads_nothing_from_another_host(owner_client):
    stored_run(minutes_ago=1, results=[{"name": "null", "score": 75, "grade": "B"}, {"name": "local"}])
    page = owner_client.get("/evaluations/").content.decode()
    assert 'src="http' not in page and 'href="http' not in page and "<script" not in page and "<image" not in page


def test_a_pending_run_names_its_staff_account_to_staff_only(owner_client, staff_client, staff):
    evaluation_request(backend_names=["null"], requested_by=staff)
    assert "by a staff account:" in owner_client.get("/evaluations/").content.decode()
    assert "by staffer:" in staff_client.get("/evaluations/").content.decode()
