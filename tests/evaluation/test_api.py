"""GET and POST /api/v1/evaluations/, GET /api/v1/evaluations/{id}, the tool's evaluate action, and the
read-only admin."""

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client

from evaluation.models import EvaluationRun
from evaluation.services import TOOL_EVALUATE_OPS, evaluation_request, evaluation_run


@pytest.mark.slow
def test_runs_are_listed_newest_first_and_paginated(owner_api, owner):
    older = evaluation_run(backend_names=["null"], ops=1).run
    newer = evaluation_run(backend_names=["local"], ops=1, requested_by=owner).run
    page = owner_api.get("/api/v1/evaluations/?page_size=1").json()
    assert page["count"] == 2 and page["next"]
    (first,) = page["results"]
    assert (first["id"], first["requested_by"], first["results"][0]["name"]) == (newer.pk, "owner", "local")
    assert first["results"][0]["operations"]["get"]["ok"] is True
    assert owner_api.get(page["next"]).json()["results"][0]["id"] == older.pk


@pytest.mark.parametrize("page", ["0", "-1", "abc", "last"])
def test_a_page_of_runs_that_is_not_a_whole_number_from_1_gets_a_400_naming_it(owner_api, page):
    response = owner_api.get("/api/v1/evaluations/", {"page": page})

    assert response.status_code == 400
    assert response.json() == {"page": ["A whole number of at least 1 is required."]}


def test_a_page_of_runs_past_the_last_answers_404(owner_api):
    assert owner_api.get("/api/v1/evaluations/", {"page": 2}).status_code == 404


def test_staff_ask_for_a_run_get_202_at_once_and_find_it_done_after_the_worker(staff_api):
    response = staff_api.post("/api/v1/evaluations/", {"backends": ["local"], "ops": 2}, format="json")

    assert response.status_code == 202
    body = response.json()
    assert (body["status"], body["ops"], body["backends"], body["requested_by"]) == ("pending", 2, ["local"], "staffer")
    assert (body["results"], body["recommendation"], body["started"]) == ([], "", None)
    location = response["Location"]
    assert location == f"http://testserver/api/v1/evaluations/{body['id']}"
    assert staff_api.get(location).json()["status"] == "pending"

    call_command("work", "--once", "--kind", "evaluation", stdout=io.StringIO())

    run = staff_api.get(location).json()
    assert (run["status"], run["error"]) == ("done", "")
    assert re.fullmatch(r"Best: local \(\d+pts, A\)", run["recommendation"])  # the points depend on the machine's speed
    assert run["results"][0]["name"] == "local" and run["results"][0]["operations"]["put"]["ok"] is True
    assert run["started"] and run["finished"]


def test_any_account_reads_one_run_and_a_missing_one_is_404(owner_api, anonymous_api):
    run = evaluation_request(backend_names=["null"], ops=1)
    assert owner_api.get(f"/api/v1/evaluations/{run.pk}").json()["status"] == "pending"
    assert owner_api.get(f"/api/v1/evaluations/{run.pk + 1}").status_code == 404
    assert anonymous_api.get(f"/api/v1/evaluations/{run.pk}").status_code == 401


def test_only_staff_may_run_one(owner_api, anonymous_api):
    assert owner_api.post("/api/v1/evaluations/", {}, format="json").status_code == 403
    assert anonymous_api.get("/api/v1/evaluations/").status_code == 401
    assert not EvaluationRun.objects.exists()


def test_a_bad_request_names_the_field(staff_api):
    unknown = staff_api.post("/api/v1/evaluations/", {"backends": ["redis"]}, format="json")
    too_many = staff_api.post("/api/v1/evaluations/", {"ops": 5000}, format="json")
    unconfigured = staff_api.post("/api/v1/evaluations/", {"backends": ["honcho"]}, format="json")
    assert (unknown.status_code, too_many.status_code, unconfigured.status_code) == (400, 400, 400)
    assert "backends" in unknown.json() and "ops" in too_many.json()
    assert "Honcho is not configured" in unconfigured.json()["backends"][0]
    assert not EvaluationRun.objects.exists()


def test_the_tools_evaluate_action_replies_as_the_reference_does(owner_api, owner):
    reply = owner_api.post("/api/v1/tool", {"action": "evaluate"}, format="json").json()
    assert reply["ok"] is True
    assert re.fullmatch(r"Best: local \(\d+pts, A\)", reply["recommendation"])
    assert {result["ops"] for result in reply["results"]} == {TOOL_EVALUATE_OPS}
    assert [(result["name"], result["ok"], result["grade"]) for result in reply["results"]] == [
        ("null", True, "B"),
        ("local", True, "A"),
    ]
    assert not EvaluationRun.objects.exists(), "only staff add runs to the hub's stored evaluations"


def test_a_staff_accounts_tool_evaluation_is_stored(staff_api, staff):
    reply = staff_api.post("/api/v1/tool", {"action": "evaluate"}, format="json").json()

    assert re.fullmatch(r"Best: local \(\d+pts, A\)", reply["recommendation"])
    assert EvaluationRun.objects.get().requested_by == staff


@pytest.mark.slow
def test_the_admin_shows_runs_but_cannot_change_them(staff):
    run = evaluation_run(backend_names=["local"], ops=1).run
    browser = Client()
    browser.force_login(staff)
    assert browser.get("/admin/evaluation/evaluationrun/").status_code == 200
    detail = browser.get(f"/admin/evaluation/evaluationrun/{run.pk}/change/")
    assert detail.status_code == 200 and b"local" in detail.content
    assert browser.get("/admin/evaluation/evaluationrun/add/").status_code == 403
    assert browser.post(f"/admin/evaluation/evaluationrun/{run.pk}/delete/", {"post": "yes"}).status_code == 403
    assert EvaluationRun.objects.filter(pk=run.pk).exists()


def test_an_account_that_is_not_staff_never_sees_a_staff_username(owner_api, owner_client, staff_api, staff):
    evaluation_run(backend_names=["null"], ops=1, requested_by=staff)

    assert owner_api.get("/api/v1/evaluations/").json()["results"][0]["requested_by"] is None
    page = owner_client.get("/evaluations/").content.decode()
    assert "staffer" not in page and "run by a staff account" in page
    assert staff_api.get("/api/v1/evaluations/").json()["results"][0]["requested_by"] == "staffer"


@pytest.mark.slow
def test_the_tools_evaluate_stops_calling_a_slow_honcho_at_its_time_limit_and_still_answers(owner_api, served_double):
    served_double.latency = 0.3  # a put costs four calls: 1.2 s each

    reply = owner_api.post("/api/v1/tool", {"action": "evaluate"}, format="json").json()

    honcho = next(result for result in reply["results"] if result["name"] == "honcho")
    operations = honcho["operations"]
    stopped = [operation for operation in operations.values() if "time limit was reached" in operation["error"]]
    assert stopped and not all(operation["ok"] for operation in operations.values())
    assert reply["recommendation"].startswith("Best: local")
    assert served_double.sessions("memoryhub") == [], "the probe data is removed all the same"
