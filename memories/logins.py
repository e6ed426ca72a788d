"""Login throttling for the dashboard and the admin: a username from one address gets a cool-down.

After LOGIN_FAILURES_ALLOWED failed logins for a username from one address within
LOGIN_LOCKOUT_WINDOW, further attempts from that address for that username are answered 429 before
any password is checked (so a locked attempt costs no password-hash work), until the oldest of
those failures leaves the window. Attempts are not counted while locked, so no one, however many
attempts they make, locks a pair for longer than the window; and a lock-out holds one address
only, so an attacker elsewhere cannot lock the account's owner out. A successful login clears the
pair's failures; `manage.py unlock_login USERNAME` clears them by hand.

A username counts as the login form hands it to authentication, stripped and folded to Unicode NFKC
(its case kept), so "owner ", " owner" and owner in fullwidth letters share owner's failures and lock.

The address is REMOTE_ADDR: the client's address as the server sets it, from the trusted proxy's
X-Forwarded-For when the hub runs behind one (FORWARDED_ALLOW_IPS in `make serve`).
"""

from datetime import datetime, timedelta

from django.contrib.auth.forms import UsernameField
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone

from memories.models import LoginFailure

LOGIN_FAILURES_ALLOWED = 10
LOGIN_LOCKOUT_WINDOW = timedelta(minutes=15)
USERNAME_LENGTH = 150  # auth.User's username, and LoginFailure's

# The login forms' own cleaning of a username (AuthenticationForm's field): stripped, then Unicode NFKC.
_LOGIN_USERNAME = UsernameField(max_length=USERNAME_LENGTH)


def _normal(username: str) -> str:
    """The name authentication looks up for username as typed, which keys the failures and the lock.

    Every spelling that reaches one account's password ("owner ", owner in fullwidth letters) is one
    name here, so none brings fresh guesses. Case is kept: the model backend matches names case-sensitively,
    so "OWNER" is another account, and folding it would let that account's login clear owner's lock.
    """
    return (_LOGIN_USERNAME.to_python(username) or "")[:USERNAME_LENGTH]


def client_address(request: HttpRequest) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown")[:64]


def login_locked_until(*, username: str, address: str, now: datetime | None = None) -> datetime | None:
    """When the lock-out of username from address ends, or None when it may try now."""
    now = now or timezone.now()
    recent = (
        LoginFailure.objects.filter(username=_normal(username), address=address, at__gt=now - LOGIN_LOCKOUT_WINDOW)
        .order_by("-at")
        .values_list("at", flat=True)[:LOGIN_FAILURES_ALLOWED]
    )
    failures = list(recent)
    if len(failures) < LOGIN_FAILURES_ALLOWED:
        return None
    return failures[-1] + LOGIN_LOCKOUT_WINDOW


def login_failure_record(*, username: str, address: str, now: datetime | None = None) -> None:
    """Count one failed login; failures that left the window are removed on the way."""
    now = now or timezone.now()
    LoginFailure.objects.filter(username=_normal(username), at__lte=now - LOGIN_LOCKOUT_WINDOW).delete()
    LoginFailure.objects.create(username=_normal(username), address=address, at=now)


def login_failures_clear(*, username: str, address: str | None = None) -> int:
    """Forget the failures of username (from one address, or from all); returns how many went."""
    failures = LoginFailure.objects.filter(username=_normal(username))
    if address is not None:
        failures = failures.filter(address=address)
    deleted, _ = failures.delete()
    return deleted


@receiver(user_login_failed, dispatch_uid="memories.logins.failed")
def _on_login_failed(sender: object, credentials: dict, request: HttpRequest | None = None, **kwargs: object) -> None:
    username = credentials.get("username")
    if request is not None and isinstance(username, str) and username:
        login_failure_record(username=username, address=client_address(request))


@receiver(user_logged_in, dispatch_uid="memories.logins.succeeded")
def _on_logged_in(sender: object, request: HttpRequest | None, user: object, **kwargs: object) -> None:
    username = getattr(user, "get_username", lambda: "")()
    if request is not None and username:
        login_failures_clear(username=username, address=client_address(request))
