"""Locks a write that changes many entries of a user takes first, so two such writes take turns.

A batch or an import locks the entries it changes one by one, as it reaches them, and inserts the new
ones. On PostgreSQL two of them on one user, naming keys in other orders, could each hold what the
other wanted next: a deadlock, which PostgreSQL ends by failing one of them. SQLite's IMMEDIATE
transactions hold the write lock from BEGIN, so there every write takes its turn already.
"""

import hashlib

from django.contrib.auth.models import User
from django.db import connection

from memories.models import MemoryEntry

# The users of an account share this many locks: each user takes the one its uid falls in. PostgreSQL keeps
# every lock in one table shared by all connections (about max_locks_per_transaction x max_connections, 6,400
# by default), so an import of thousands of users takes at most this many; two users' batches that share a
# lock only take turns.
USER_LOCK_BUCKETS = 32


def _user_lock_key(owner: User, uid: str) -> int:
    """The advisory lock of one account's user: a signed 64-bit number from the account and the uid's bucket."""
    uid_digest = hashlib.blake2b(uid.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    bucket = int.from_bytes(uid_digest) % USER_LOCK_BUCKETS
    digest = hashlib.blake2b(f"memoryhub-user:{owner.pk}:{bucket}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def users_lock(*, owner: User, uids: list[str]) -> None:
    """Take, for the rest of the caller's transaction, the lock of each of these users of owner (PostgreSQL).

    Batches and imports take it before they touch any entry, so two of them on one user take turns. The
    locks are taken in one order (sorted), so two imports of several users never wait on each other in a
    circle, and there are USER_LOCK_BUCKETS of them per account at most. Single writes do not take it: they
    hold one entry at a time, so they close no circle.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for key in sorted({_user_lock_key(owner, uid) for uid in uids}):
            cursor.execute("SELECT pg_advisory_xact_lock(%s::bigint)", [key])


def entries_lock(*, owner: User, uid: str, keys: list[str]) -> None:
    """Lock the entries among keys that exist, in the order of their ids: the order a forget or an erasure of
    the user (user_forget, user_erase) locks them in, so the two never wait on each other in a circle."""
    if not connection.features.has_select_for_update:
        return
    list(
        MemoryEntry.objects.select_for_update()
        .filter(owner=owner, uid=uid, key__in=sorted(set(keys)))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
