"""Under the production settings (ALLOWED_HOSTS naming the public host, HTTPS redirect): the health
check still answers a load balancer or `curl http://127.0.0.1:8000/healthz` on the machine, and a
request naming another host costs the log one line, not a traceback."""

import io
import logging

import pytest
from django.test import Client


@pytest.fixture
def production(settings):
    settings.ALLOWED_HOSTS = ["memory.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


def test_the_health_check_answers_by_the_servers_own_address_over_plain_http(db, production):
    response = Client().get("/healthz", HTTP_HOST="127.0.0.1:8000")

    assert response.status_code == 200
    assert response.json()["status"] == "ok" and response.json()["database"] is True
    assert response["Cache-Control"] == "private, no-store"


def test_every_other_path_keeps_the_host_check_and_the_https_redirect(db, production):
    assert Client().get("/login/", HTTP_HOST="127.0.0.1:8000").status_code == 400
    redirected = Client().get("/login/", HTTP_HOST="memory.example.org")
    assert (redirected.status_code, redirected["Location"]) == (301, "https://memory.example.org/login/")
    served = Client().get("/login/", HTTP_HOST="memory.example.org", HTTP_X_FORWARDED_PROTO="https")
    assert served.status_code == 200


def test_a_request_for_another_host_is_one_line_in_the_log(db, production):
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("django.security.DisallowedHost")
    logger.addHandler(handler)
    try:
        assert Client().get("/api/v1/info", HTTP_HOST="203.0.113.7").status_code == 400
    finally:
        logger.removeHandler(handler)

    assert log.getvalue().splitlines() == [
        "Invalid HTTP_HOST header: '203.0.113.7'. You may need to add '203.0.113.7' to ALLOWED_HOSTS."
    ]
