"""Accounts and their API tokens: the one place that creates, rotates and revokes them."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest
from rest_framework.authtoken.models import Token
from rest_framework.request import Request

from memories.models import PROBE_USERNAME


class AccountExists(Exception):
    """An account with that name is there already."""


def account_create(*, username: str, staff: bool = False, password: str | None = None) -> tuple[User, str]:
    """Create an account (an agent's or a person's) and its API token; returns both.

    Without a password the account cannot log in to the dashboard until one is set
    (`manage.py changepassword NAME`); its token works at once.
    """
    user_model = get_user_model()
    with transaction.atomic():
        if user_model.objects.filter(username=username).exists():
            raise AccountExists(username)
        account = user_model(username=username, is_staff=staff, is_superuser=staff)
        if password:
            account.set_password(password)
        else:
            account.set_unusable_password()
        account.full_clean(exclude=["password"])
        account.save()
        token = Token.objects.create(user=account)
    return account, token.key


def account_create_locked(*, username: str) -> User:
    """Create an account that cannot sign in: no usable password and no API token.

    For the accounts a restored backup names (owners and actors of its history) that this hub
    does not have. The account holds its data; an operator opens it with
    `manage.py changepassword NAME` or gives it a token with `manage.py create_account NAME --rotate`.
    Raises AccountExists, or ValidationError for a name Django refuses.
    """
    user_model = get_user_model()
    with transaction.atomic():
        if user_model.objects.filter(username=username).exists():
            raise AccountExists(username)
        account = user_model(username=username)
        account.set_unusable_password()
        account.full_clean(exclude=["password"])
        account.save()
    return account


def request_account(request: HttpRequest | Request) -> User:
    """The account signed in on a request that its view's permission check let through.

    Every page and endpoint that calls it requires a login or a token, so an anonymous request
    never gets here; if one did, it is refused rather than served as nobody.
    """
    account = request.user
    if not isinstance(account, User):
        raise PermissionDenied
    return account


def token_rotate(*, account: User) -> str:
    """Issue a new token for the account; the old one stops working at once."""
    with transaction.atomic():
        Token.objects.filter(user=account).delete()
        return Token.objects.create(user=account).key


def token_revoke(*, account: User) -> bool:
    """Revoke the account's token; True when there was one."""
    deleted, _ = Token.objects.filter(user=account).delete()
    return bool(deleted)


class ProbeAccountTaken(Exception):
    """An account that people or agents use holds the name reserved for the evaluation's probe."""


def probe_account() -> User:
    """The reserved account the evaluation writes its probe data under, made on first use.

    It cannot log in (inactive, no password, no token), so no one can read or add to its data.
    Raises ProbeAccountTaken when an active account already holds the reserved name.
    """
    user_model = get_user_model()
    with transaction.atomic():
        account = user_model.objects.filter(username=PROBE_USERNAME).first()
        if account is None:
            account = user_model(username=PROBE_USERNAME, is_active=False)
            account.set_unusable_password()
            account.save()
        elif account.is_active:
            raise ProbeAccountTaken(
                f"the account {PROBE_USERNAME!r} is reserved for evaluation probes but is an active account"
            )
    return account
