import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def _run(*args, env=None, monkeypatch=None):
    from io import StringIO

    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _works(token: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/v1/info").status_code == 200


def test_create_account_prints_a_token_that_works(db):
    out, _ = _run("create_account", "agent-7")

    token = out.strip()
    assert _works(token)
    account = User.objects.get(username="agent-7")
    assert not account.is_staff
    assert not account.has_usable_password()


def test_create_account_with_staff_makes_a_staff_account(db):
    _run("create_account", "ops", "--staff")

    assert User.objects.get(username="ops").is_staff


def test_create_account_refuses_an_existing_name(db):
    _run("create_account", "agent-7")

    with pytest.raises(CommandError, match="--rotate"):
        _run("create_account", "agent-7")


def test_rotate_issues_a_new_token_and_revokes_the_old(db):
    old = _run("create_account", "agent-7")[0].strip()

    new = _run("create_account", "agent-7", "--rotate")[0].strip()

    assert new != old
    assert _works(new)
    assert not _works(old)
    assert Token.objects.filter(user__username="agent-7").count() == 1


def test_rotate_of_a_missing_account_fails_clearly(db):
    with pytest.raises(CommandError, match="No account named 'ghost'"):
        _run("create_account", "ghost", "--rotate")


def test_first_run_creates_the_admin_once_and_prints_its_password_and_token(db, monkeypatch):
    monkeypatch.delenv("MEMORYHUB_ADMIN_PASSWORD", raising=False)

    out, _ = _run("first_run")
    again, _ = _run("first_run")

    lines = dict(
        line.strip().split(":", 1)
        for line in out.splitlines()
        if line.startswith("  ") and ":" in line and "curl" not in line
    )
    password, token = lines["password"].strip(), lines["API token"].strip()
    assert User.objects.get(username="admin").check_password(password)
    assert _works(token)
    assert "nothing to prepare" in again
    assert token not in again and password not in again
    assert User.objects.filter(is_superuser=True).count() == 1


def test_first_run_takes_the_password_from_the_environment(db, monkeypatch):
    monkeypatch.setenv("MEMORYHUB_ADMIN_PASSWORD", "a-chosen-password-42")

    out, _ = _run("first_run")

    assert "a-chosen-password-42" not in out
    assert User.objects.get(username="admin").check_password("a-chosen-password-42")


def test_first_run_points_its_hint_at_the_address_the_hub_serves(db, monkeypatch):
    monkeypatch.delenv("MEMORYHUB_ADMIN_PASSWORD", raising=False)

    out, _ = _run("first_run", "--url", "http://127.0.0.1:8731")

    assert "http://127.0.0.1:8731/api/v1/info" in out


def test_first_run_under_the_production_settings_points_its_hint_at_the_public_host(db, monkeypatch, settings):
    # `make serve` passes its bind address; the hub answers 400 there when ALLOWED_HOSTS names only the public host.
    monkeypatch.delenv("MEMORYHUB_ADMIN_PASSWORD", raising=False)
    settings.ALLOWED_HOSTS = ["memory.example.org", "www.example.org"]
    settings.SECURE_SSL_REDIRECT = True

    out, _ = _run("first_run", "--url", "http://127.0.0.1:8000")

    assert "https://memory.example.org/api/v1/info" in out and "127.0.0.1" not in out
