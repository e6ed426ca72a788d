"""GET /healthz, the work status in /api/v1/info and on the overview: whether a worker is there and
what waits; and a local-only hub never loads the Honcho SDK."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from evaluation.services import evaluation_request
from memories.work import Worker, job_kinds
from tests.support.hub_process import call, hub_database, running_hub

ROOT = Path(__file__).resolve().parent.parent


def test_an_idle_hub_without_a_worker_is_healthy_in_one_query(db, django_assert_num_queries):
    with django_assert_num_queries(1):
        response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": True,
        "worker_seen": False,
        "last_seen": None,
        "waiting": {"sync": 0, "embeddings": 0, "evaluation": 0, "expiry": 0},
    }


def test_work_waiting_without_a_worker_is_503_until_a_worker_is_seen(db):
    evaluation_request(backend_names=["null"], ops=1)
    waiting = Client().get("/healthz")
    assert waiting.status_code == 503
    assert (waiting.json()["status"], waiting.json()["waiting"]) == (
        "no worker",
        {"sync": 0, "embeddings": 0, "evaluation": 1, "expiry": 0},
    )

    Worker(job_kinds(), name="host:1").beat()
    seen = Client().get("/healthz")
    assert seen.status_code == 200
    assert seen.json()["status"] == "ok" and seen.json()["worker_seen"] is True and seen.json()["last_seen"]


def test_info_says_whether_a_worker_was_seen_and_what_waits(owner_api):
    evaluation_request(backend_names=["null"], ops=1)
    work = owner_api.get("/api/v1/info").json()["work"]
    assert work == {
        "worker_seen": False,
        "last_seen": None,
        "waiting": {"sync": 0, "embeddings": 0, "evaluation": 1, "expiry": 0},
    }


@pytest.mark.parametrize("mode", ["off", "local"])
def test_info_names_who_embeds_for_the_search_by_meaning(owner_api, settings, mode):
    settings.MEMORYHUB_EMBEDDINGS = mode

    assert owner_api.get("/api/v1/info").json()["embeddings"] == mode


def test_the_overview_warns_when_work_waits_and_no_worker_runs(owner_client):
    evaluation_request(backend_names=["null"], ops=1)
    page = owner_client.get("/").content.decode()
    assert '<span class="badge bad">no worker</span>' in page and "1 evaluation waiting" in page
    assert "./hub work --loop" in page

    Worker(job_kinds(), name="host:1").beat()
    assert '<span class="badge ok">worker running</span>' in owner_client.get("/").content.decode()


def test_the_work_panel_costs_the_overview_one_query(owner_client, settings, django_assert_num_queries):
    settings.MEMORYHUB_OVERVIEW_PANELS = ["memories.panels.work_panel"]
    # the overview's six (see test_the_overview_renders_in_six_queries) and the work status
    with django_assert_num_queries(7):
        assert "Background work" in owner_client.get("/").content.decode()


PROBE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
import django
django.setup()
from django.core.management import call_command
call_command("migrate", "--noinput", verbosity=0)
call_command("check", verbosity=0)
import memoryhub.asgi
from django.test import Client
answers = [Client().get(path, HTTP_HOST="localhost").status_code for path in ("/healthz", "/login/")]
call_command("work", "--once", stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))
honcho = sorted(name for name in sys.modules if name.split(".")[0] == "honcho")
print(json.dumps({"answers": answers, "honcho": honcho}))
"""


@pytest.mark.process
def test_a_local_only_hub_starts_serves_and_works_without_loading_the_honcho_sdk(tmp_path):
    cleared = ("DATABASE_URL", "HONCHO_URL", "HONCHO_API_KEY", "MEMORYHUB_HONCHO_SYNC", "DJANGO_SETTINGS_MODULE")
    env = {name: value for name, value in os.environ.items() if name not in cleared}
    env.update(SECRET_KEY="probe-only-not-secret", MEMORYHUB_DATA_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True
    )
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    assert report == {"answers": [200, 200], "honcho": []}


@pytest.mark.process
def test_the_served_health_check_needs_no_token_and_is_never_rate_limited(tmp_path):
    with (
        hub_database(tmp_path) as database,
        running_hub(database, tmp_path / "hub.log", workers=1, env={"MEMORYHUB_RATE_LIMIT": "5/hour"}) as hub,
    ):
        answers = [call(hub.port, "GET", "/healthz", token="not-a-token") for _ in range(12)]
        log = hub.log()
    assert {status for status, _, _ in answers} == {200}
    assert answers[-1][2]["status"] == "ok"
    assert '"GET /healthz' not in log
