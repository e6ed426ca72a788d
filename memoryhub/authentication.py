"""API token authentication that reads a token from the database once per worker, not once per request.

The token lookup (a join of the token, its account and the account's policy) was a fifth of a GET.
Each worker keeps the tokens it has seen, with their accounts and policies, for at most
TOKEN_CACHE_SECONDS, and forgets all of them the moment any token, account or policy changes on this
machine:

- every save or delete of a Token, a User or an AccountPolicy (a rotation, a revocation, an account
  deactivated or deleted, a policy changed, in the dashboard, the admin or a management command)
  bumps a generation counter once its transaction commits (memories.apps connects the signals);
- the counter lives in shared memory (a file under /dev/shm that every process of this hub maps,
  as the rate limit's table does), and each request compares it with the one its worker's tokens
  were read under: a different number empties the worker's cache before the token is looked at.

So on one machine a rotated or revoked token is refused from the next request on. Across several
app servers (PostgreSQL, MEMORYHUB_CACHE_URL) the other servers see the change within
TOKEN_CACHE_SECONDS. A change that bypasses the models' signals (QuerySet.update() on accounts, raw
SQL) is also seen within TOKEN_CACHE_SECONDS. Unknown tokens are never kept: each is a query and a 401.

The account's policy (AccountPolicy: default privacy, guard mode) comes with it, so a write through
the API reads no policy (memories.selectors.account_policy takes the one its account carries). Both
the REST API (CachedTokenAuthentication) and the MCP endpoint (memories.mcp.http) read tokens
through `token_read`.
"""

import copy
import fcntl
import mmap
import os
import struct
import threading
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from memories.models import AccountPolicy
from memories.selectors import account_policy_carried, account_policy_carry

# How long a worker may answer from a token it read, when nothing on this machine said it changed.
TOKEN_CACHE_SECONDS = 5.0
# Tokens one worker keeps at most; past that it starts afresh (a hub has few agents, not thousands).
TOKEN_CACHE_SIZE = 1024
GENERATION = struct.Struct("<q")


class SharedGeneration:
    """One counter in a file mapped by every process that opens the same path; read without a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pid: int | None = None
        self._fd = -1
        self._map: mmap.mmap | None = None
        self._lock = threading.Lock()

    def _open(self) -> mmap.mmap:
        if self._map is not None and self._pid == os.getpid():
            return self._map
        with self._lock:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            if os.fstat(fd).st_size < GENERATION.size:
                os.ftruncate(fd, GENERATION.size)
            self._fd, self._map, self._pid = fd, mmap.mmap(fd, GENERATION.size), os.getpid()
        return self._map

    def read(self) -> int:
        return GENERATION.unpack_from(self._open(), 0)[0]

    def bump(self) -> None:
        shared = self._open()
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            GENERATION.pack_into(shared, 0, GENERATION.unpack_from(shared, 0)[0] + 1)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


_generations: dict[str, SharedGeneration] = {}


def token_generation() -> SharedGeneration:
    """The generation counter of this hub's tokens (one file per data folder and database)."""
    path = str(settings.MEMORYHUB_TOKEN_GENERATION_FILE)
    generation = _generations.get(path)
    if generation is None:
        generation = _generations[path] = SharedGeneration(Path(path))
    return generation


# This worker's tokens: key -> (token, read at (monotonic seconds)), under the generation below.
_tokens: dict[str, tuple[Token, float]] = {}
_tokens_generation: list[int] = [-1]


def tokens_changed() -> None:
    """Forget every token this machine's workers hold, once the current transaction commits (at once
    outside one): a worker reading before the commit would see the old row and keep it again."""
    _tokens.clear()
    transaction.on_commit(_bump_after_commit)


def _bump_after_commit() -> None:
    _tokens.clear()
    token_generation().bump()


def on_token_or_account_change(sender: type, **kwargs: object) -> None:
    """The receiver of post_save and post_delete for Token, User and AccountPolicy (connected in memories.apps)."""
    tokens_changed()


def _token_query(key: str) -> Token | None:
    """The token with its account and the account's policy: one query (a join of the three)."""
    token = Token.objects.select_related("user", "user__memory_policy").filter(key=key).first()
    if token is not None:
        try:
            policy: AccountPolicy | None = token.user.memory_policy
        except AccountPolicy.DoesNotExist:
            policy = None
        account_policy_carry(account=token.user, policy=policy)
    return token


def token_read(key: str) -> Token | None:
    """The token whose key this is, with its account, which carries its policy; None when there is none.

    From this worker's tokens when it read this one within TOKEN_CACHE_SECONDS and nothing on this
    machine changed since, else one query. Only tokens of active accounts are kept; the caller
    refuses a token whose account is inactive. Each call gets its own copies of the token, the
    account and the policy: nothing one request sets on them reaches another.
    """
    generation = token_generation().read()
    if generation != _tokens_generation[0]:
        _tokens.clear()
        _tokens_generation[0] = generation
    now = time.monotonic()
    held = _tokens.get(key)
    if held is None or now - held[1] > TOKEN_CACHE_SECONDS:
        token = _token_query(key)
        if token is None or not token.user.is_active:
            return token
        if len(_tokens) >= TOKEN_CACHE_SIZE:
            _tokens.clear()
        held = _tokens[key] = (token, now)
    token = copy.copy(held[0])
    token.user = copy.copy(held[0].user)
    policy = account_policy_carried(token.user)
    account_policy_carry(account=token.user, policy=copy.copy(policy) if policy is not None else None)
    return token


class CachedTokenAuthentication(TokenAuthentication):
    """DRF's TokenAuthentication (the same header, the same 401s), reading each token through `token_read`;
    see the module's docstring for when a change is seen."""

    def authenticate_credentials(self, key: str) -> tuple[User, Token]:
        token = token_read(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
