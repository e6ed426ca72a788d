"""The evaluations page in a real browser: staff run an evaluation and see it charted."""

from playwright.sync_api import Page, expect

from evaluation.models import EvaluationRun
from tests.browser.conftest import log_in


def test_staff_run_an_evaluation_and_see_it_in_the_chart_and_on_the_overview(page: Page, staff) -> None:
    log_in(page, staff, "staff-password-1")
    expect(page.get_by_role("region", name="Latest evaluation")).to_contain_text("No evaluation yet")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Evaluations").click()
    expect(page.get_by_text("No evaluation yet.")).to_be_visible()

    page.get_by_role("button", name="Run an evaluation now").click()
    expect(page.get_by_role("status")).to_contain_text("Evaluated null B, local A. Best: local (100pts, A)")
    scores = page.get_by_role("img", name="Score per backend across runs")
    latencies = page.get_by_role("img", name="p50 latency per backend across runs")
    expect(scores).to_be_visible()
    expect(latencies).to_be_visible()
    expect(scores.locator("path.point")).to_have_count(2)
    local_row = page.locator("table.results tbody tr", has=page.get_by_role("rowheader", name="local", exact=True))
    expect(local_row.locator('td[data-label="Score"]')).to_have_text("100")
    expect(local_row.locator('td[data-label="Grade"]')).to_have_text("A")

    page.get_by_role("button", name="Run an evaluation now").click()
    expect(scores.locator("path.point")).to_have_count(4)
    expect(latencies.locator("path.point")).to_have_count(4)
    expect(scores.locator('g[data-backend="local"] polyline')).to_have_count(1)
    box = scores.bounding_box()
    assert box is not None and box["height"] > 100

    page.get_by_text("The charts' figures as a table").click()
    expect(page.locator("details.figures tbody tr")).to_have_count(4)
    assert EvaluationRun.objects.count() == 2

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").click()
    expect(page.get_by_role("region", name="Latest evaluation")).to_contain_text("local, 100 points")


def test_an_account_that_is_not_staff_sees_runs_but_no_run_button(page: Page, owner, staff) -> None:
    log_in(page, owner, "owner-password-1")
    page.goto("/evaluations/")
    expect(page.get_by_text("./hub evaluate")).to_be_visible()
    expect(page.get_by_role("button", name="Run an evaluation now")).to_have_count(0)
