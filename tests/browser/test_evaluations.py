"""The evaluations page in a real browser: staff ask for an evaluation, see it pending while the
worker runs it (the page reloads itself), then see it charted."""

import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from evaluation.models import EvaluationRun
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def run_the_worker_once() -> None:
    call_command("work", "--once", "--kind", "evaluation", stdout=io.StringIO())


def test_staff_run_an_evaluation_and_see_it_in_the_chart_and_on_the_overview(page: Page, staff) -> None:
    log_in(page, staff, "staff-password-1")
    expect(page.get_by_role("region", name="Latest evaluation")).to_contain_text("No evaluation yet")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Evaluations").click()
    expect(page.get_by_text("No evaluation yet.")).to_be_visible()

    page.get_by_role("button", name="Run an evaluation now").click()
    expect(page.get_by_role("status")).to_contain_text("Evaluation asked for: 20 puts, gets and finds on null, local")
    in_progress = page.get_by_role("region", name="In progress")
    expect(in_progress).to_contain_text("pending")
    expect(in_progress).to_contain_text("No worker has been seen in the last minute")

    run_the_worker_once()

    # no click: the page reloads itself while the run is pending
    expect(page.get_by_role("region", name="Recommendation")).to_contain_text(re.compile(r"Best: local \(\d+pts, A\)"))
    expect(page.get_by_role("region", name="In progress")).to_have_count(0)
    scores = page.get_by_role("img", name="Score per backend across runs")
    latencies = page.get_by_role("img", name="p50 latency per backend across runs")
    expect(scores).to_be_visible()
    expect(latencies).to_be_visible()
    expect(scores.locator("path.point")).to_have_count(2)
    local_row = page.locator("table.results tbody tr", has=page.get_by_role("rowheader", name="local", exact=True))
    expect(local_row.locator('td[data-label="Grade"]')).to_have_text("A")
    # The whole table fits the page at 1280 px, the reasons wrapped, with no box to scroll sideways.
    widths = page.locator("table.results").evaluate(
        "table => [table.parentElement.scrollWidth, table.parentElement.clientWidth]"
    )
    assert widths[0] <= widths[1], widths

    page.get_by_role("button", name="Run an evaluation now").click()
    expect(page.get_by_role("region", name="In progress")).to_contain_text("pending")
    run_the_worker_once()
    expect(scores.locator("path.point")).to_have_count(4)
    expect(latencies.locator("path.point")).to_have_count(4)
    expect(scores.locator('g[data-backend="local"] polyline')).to_have_count(1)
    box = scores.bounding_box()
    assert box is not None and box["height"] > 100

    page.get_by_text("The charts' figures as a table").click()
    expect(page.locator("details.figures tbody tr")).to_have_count(4)
    assert EvaluationRun.objects.count() == 2

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").click()
    expect(page.get_by_role("region", name="Latest evaluation")).to_contain_text(re.compile(r"local, \d+ points"))


def test_an_account_that_is_not_staff_sees_runs_but_no_run_button(page: Page, owner, staff) -> None:
    log_in(page, owner, "owner-password-1")
    page.goto("/evaluations/")
    expect(page.get_by_text("./hub evaluate")).to_be_visible()
    expect(page.get_by_role("button", name="Run an evaluation now")).to_have_count(0)
