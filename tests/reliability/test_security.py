"""Production settings, security headers, revocable tokens and logs that hold no memory values."""

import logging
import os
import subprocess
import sys
import uuid

import pytest
from rest_framework.test import APIClient

from memories.accounts import token_revoke, token_rotate
from tests.support.hub_process import PROJECT

PRODUCTION_ENVIRONMENT = {
    "SECRET_KEY": "q9" + uuid.uuid4().hex + uuid.uuid4().hex,
    "DEBUG": "0",
    "ALLOWED_HOSTS": "memories.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://memories.example.org",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SECURE_PROXY_SSL_HEADER": "1",
}


@pytest.mark.slow
def test_check_deploy_is_clean_with_the_documented_production_settings():
    completed = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=PROJECT,
        env={**os.environ, **PRODUCTION_ENVIRONMENT},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr + completed.stdout
    assert "no issues" in completed.stdout


@pytest.mark.slow
def test_check_deploy_warns_when_https_is_left_off():
    environment = {**os.environ, **PRODUCTION_ENVIRONMENT, "SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0"}
    completed = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=PROJECT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode != 0
    assert "security.W004" in completed.stderr + completed.stdout


def test_api_answers_carry_the_security_headers(owner_api, settings):
    settings.SECURE_HSTS_SECONDS = 3600
    response = owner_api.get("/api/v1/info", secure=True)
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response["Strict-Transport-Security"] == "max-age=3600"


def test_the_admin_login_page_is_not_framed_and_carries_a_csrf_token(client):
    response = client.get("/admin/login/")
    assert response["X-Frame-Options"] == "DENY"
    assert 'name="csrfmiddlewaretoken"' in response.content.decode()


def test_a_revoked_token_stops_working_at_once(owner, owner_api):
    assert owner_api.get("/api/v1/info").status_code == 200
    assert token_revoke(account=owner) is True
    assert owner_api.get("/api/v1/info").status_code == 401


def test_a_rotated_token_replaces_the_old_one(owner, owner_api):
    new_token = token_rotate(account=owner)
    assert owner_api.get("/api/v1/info").status_code == 401
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=f"Token {new_token}")
    assert fresh.get("/api/v1/info").status_code == 200


def test_the_admin_can_revoke_a_token(owner, owner_api, staff, client):
    client.force_login(staff)
    response = client.post(f"/admin/authtoken/tokenproxy/{owner.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert owner_api.get("/api/v1/info").status_code == 401


@pytest.fixture
def every_log_line(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


def test_no_memory_value_reaches_the_logs_whatever_happens_to_the_request(
    owner_api, stranger_api, every_log_line, settings
):
    settings.MEMORYHUB_RATE_LIMIT = ""
    secret = f"private-{uuid.uuid4().hex}"
    url = "/api/v1/users/alice/memories/diary"
    owner_api.put(url, {"value": secret, "meta": {"note": secret}}, format="json")
    owner_api.put(url, {"value": secret + " again"}, format="json", HTTP_IF_MATCH='"9"')  # 412
    owner_api.put(url, {"value": secret, "kind": "not a kind!"}, format="json")  # 400
    owner_api.put(url, {"value": secret, "meta": "not an object"}, format="json")  # 400
    owner_api.patch("/api/v1/users/alice/memories/missing", {"value": secret}, format="json")  # 404
    owner_api.generic("PUT", url, '{"value": "' + secret + '"', content_type="application/json")  # malformed JSON
    stranger_api.get(url)  # 404
    owner_api.post(
        "/api/v1/tool", {"action": "store", "uid": "alice", "key": "x", "value": secret, "meta": []}, format="json"
    )
    owner_api.post("/api/v1/tool", {"action": "query", "uid": "alice", "query": secret}, format="json")
    owner_api.delete(url)
    assert every_log_line.records, "the failed requests above are logged"
    assert secret not in every_log_line.text
