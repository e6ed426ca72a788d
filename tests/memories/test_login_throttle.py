"""The login door: ten failures for a username from one address lock that pair out for fifteen minutes."""

import io
from datetime import timedelta

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from memories.accounts import account_create
from memories.logins import LOGIN_FAILURES_ALLOWED, LOGIN_LOCKOUT_WINDOW
from memories.models import LoginFailure


class CountingHasher(MD5PasswordHasher):
    """MD5, counting every password it checks: how much hash work a login costs."""

    algorithm = "counting_md5"
    checks = 0

    def verify(self, password: str, encoded: str) -> bool:
        CountingHasher.checks += 1
        return super().verify(password, encoded)


@pytest.fixture
def counting_hasher(settings, owner):
    settings.PASSWORD_HASHERS = ["tests.memories.test_login_throttle.CountingHasher"]
    owner.set_password("owner-password-1")
    owner.save()
    CountingHasher.checks = 0
    return CountingHasher


def _attempt(path: str, password: str, address: str = "203.0.113.7", username: str = "owner"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_the_eleventh_attempt_after_ten_failures_is_refused_without_checking_the_password(path, counting_hasher):
    for _ in range(LOGIN_FAILURES_ALLOWED):
        assert _attempt(path, "wrong-password").status_code == 200  # the form again, with its error
    checks_before = counting_hasher.checks

    locked = _attempt(path, "owner-password-1")

    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert 1 <= int(locked["Retry-After"]) <= LOGIN_LOCKOUT_WINDOW.total_seconds()
    assert counting_hasher.checks == checks_before  # no hash work spent on a locked attempt


def test_another_address_still_logs_in_so_an_attacker_cannot_lock_the_owner_out(counting_hasher):
    for _ in range(LOGIN_FAILURES_ALLOWED):
        _attempt("/login/", "wrong-password", address="198.51.100.66")

    response = _attempt("/login/", "owner-password-1", address="203.0.113.7")

    assert response.status_code == 302 and response["Location"] == "/"


def test_the_lock_ends_when_the_window_has_passed_however_often_the_attacker_tries(counting_hasher):
    for _ in range(LOGIN_FAILURES_ALLOWED):
        _attempt("/login/", "wrong-password")
    for _ in range(20):  # attempts while locked are not counted: they cannot stretch the lock
        assert _attempt("/login/", "wrong-password").status_code == 429
    assert LoginFailure.objects.count() == LOGIN_FAILURES_ALLOWED
    LoginFailure.objects.update(at=timezone.now() - LOGIN_LOCKOUT_WINDOW - timedelta(seconds=1))

    assert _attempt("/login/", "owner-password-1").status_code == 302


FULLWIDTH_OWNER = "\uff4f\uff57\uff4e\uff45\uff52"  # "owner" in fullwidth letters, NFKC's "owner"
FULLWIDTH_O = "\uff4f"

# Each names the owner's account to the login form, which strips the name and folds it to Unicode NFKC
# before it looks the account up ("\u2003" is an em space).
SPELLINGS_OF_OWNER = ["owner ", " owner", "owner  ", "\towner\n", "\u2003owner", FULLWIDTH_OWNER, f"{FULLWIDTH_O}wner"]


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
@pytest.mark.parametrize("spelling", SPELLINGS_OF_OWNER)
def test_another_spelling_of_a_locked_name_is_locked_too(path, spelling, counting_hasher):
    for _ in range(LOGIN_FAILURES_ALLOWED):
        _attempt(path, "wrong-password")

    locked = _attempt(path, "wrong-password", username=spelling)

    assert locked.status_code == 429
    assert counting_hasher.checks == LOGIN_FAILURES_ALLOWED  # no guess was spent on the other spelling


@pytest.mark.parametrize("spelling", SPELLINGS_OF_OWNER)
def test_the_right_password_under_another_spelling_does_not_log_in_while_locked(spelling, counting_hasher):
    assert _attempt("/login/", "owner-password-1", username=spelling).status_code == 302  # the form's own folding
    for _ in range(LOGIN_FAILURES_ALLOWED):
        _attempt("/login/", "wrong-password")

    response = _attempt("/login/", "owner-password-1", username=spelling)

    assert response.status_code == 429


def test_failures_under_several_spellings_count_towards_one_lock(counting_hasher):
    for number in range(LOGIN_FAILURES_ALLOWED):
        _attempt("/login/", "wrong-password", username=SPELLINGS_OF_OWNER[number % len(SPELLINGS_OF_OWNER)])

    assert _attempt("/login/", "owner-password-1", username=f"{FULLWIDTH_O}wner ").status_code == 429
    assert set(LoginFailure.objects.values_list("username", flat=True)) == {"owner"}


def test_a_name_in_another_case_is_another_account_whose_login_leaves_the_lock_in_place(counting_hasher):
    account_create(username="OWNER", password="other-password-1")  # logins match names case-sensitively
    for _ in range(LOGIN_FAILURES_ALLOWED):
        _attempt("/login/", "wrong-password")

    assert _attempt("/login/", "owner-password-1", username="OWNER").status_code == 200  # not owner's password
    assert _attempt("/login/", "other-password-1", username="OWNER").status_code == 302

    assert _attempt("/login/", "owner-password-1").status_code == 429


def test_the_unlock_command_lifts_the_lock_of_the_name_however_it_is_typed(counting_hasher):
    for _ in range(LOGIN_FAILURES_ALLOWED):
        _attempt("/login/", "wrong-password")

    call_command("unlock_login", f" {FULLWIDTH_OWNER} ", stdout=io.StringIO())

    assert _attempt("/login/", "owner-password-1").status_code == 302


def test_the_unlock_command_lifts_the_lock(counting_hasher):
    for _ in range(LOGIN_FAILURES_ALLOWED):
        _attempt("/login/", "wrong-password")
    out = io.StringIO()

    call_command("unlock_login", "owner", stdout=out)

    assert out.getvalue().strip() == f"Cleared {LOGIN_FAILURES_ALLOWED} failed logins of owner."
    assert _attempt("/login/", "owner-password-1").status_code == 302


def test_a_successful_login_clears_the_failures_before_it(counting_hasher):
    for _ in range(LOGIN_FAILURES_ALLOWED - 1):
        _attempt("/login/", "wrong-password")
    assert _attempt("/login/", "owner-password-1").status_code == 302

    assert LoginFailure.objects.count() == 0
