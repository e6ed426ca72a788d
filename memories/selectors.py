"""Reads of entries and their history, each scoped to the account that asks.

Every function takes the owner and returns only that account's rows: there is no read here that
could show one account another's memories.
"""

from collections.abc import Iterator

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Max, Q, QuerySet

from memories import search
from memories.models import MemoryEntry, MemoryEvent

MATCH_RANKED = "ranked"
MATCH_SUBSTRING = "substring"
MATCH_MODES = (MATCH_RANKED, MATCH_SUBSTRING)


def entry_get(*, owner: AbstractBaseUser, uid: str, key: str) -> MemoryEntry | None:
    """The entry (uid, key) of this account, or None."""
    return MemoryEntry.objects.filter(owner=owner, uid=uid, key=key).first()


def entry_list(*, owner: AbstractBaseUser, uid: str, kind: str | None = None) -> QuerySet[MemoryEntry]:
    """One user's entries, newest first (unevaluated: page it)."""
    entries = MemoryEntry.objects.filter(owner=owner, uid=uid)
    if kind:
        entries = entries.filter(kind=kind)
    return entries.order_by("-updated", "-id")


def entry_find(
    *,
    owner: AbstractBaseUser,
    uid: str,
    query_text: str,
    kind: str | None = None,
    match: str = MATCH_RANKED,
) -> QuerySet[MemoryEntry]:
    """One user's entries whose key or value holds query_text, case-insensitively.

    match=MATCH_RANKED (the default) uses the full-text index: best match first, then newest.
    Query texts of 1 or 2 characters, and match=MATCH_SUBSTRING, scan instead, newest first.
    Either way every entry that holds query_text is found.
    """
    if match == MATCH_RANKED and len(query_text) >= search.MIN_INDEXED_LENGTH:
        return search.ranked(owner_id=owner.pk, uid=uid, kind=kind, query_text=query_text)
    entries = MemoryEntry.objects.filter(owner=owner, uid=uid)
    if kind:
        entries = entries.filter(kind=kind)
    return entries.filter(Q(key__icontains=query_text) | Q(value__icontains=query_text)).order_by("-updated", "-id")


def user_list(*, owner: AbstractBaseUser, search: str | None = None) -> QuerySet:
    """The account's uids, each with its number of entries and last update, most recent first.

    Rows are dicts: {"uid", "entries", "last_updated"}.
    """
    entries = MemoryEntry.objects.filter(owner=owner)
    if search:
        entries = entries.filter(uid__icontains=search)
    return (
        entries.values("uid")
        .annotate(entries=Count("id"), last_updated=Max("updated"))
        .order_by("-last_updated", "uid")
    )


def uid_exists(*, owner: AbstractBaseUser, uid: str) -> bool:
    return MemoryEntry.objects.filter(owner=owner, uid=uid).exists()


def entry_history(*, owner: AbstractBaseUser, uid: str, key: str) -> QuerySet[MemoryEvent]:
    """Every recorded change to (uid, key), newest first, including changes to since-deleted entries."""
    return (
        MemoryEvent.objects.filter(owner=owner, uid=uid, key=key)
        .select_related("actor")
        .order_by("-id")
    )


def owner_counts(*, owner: AbstractBaseUser) -> dict[str, int]:
    """How many entries and distinct uids the account holds."""
    totals = MemoryEntry.objects.filter(owner=owner).aggregate(entries=Count("id"), users=Count("uid", distinct=True))
    return {"entries": totals["entries"], "users": totals["users"]}


EXPORT_FIELDS = ("owner__username", "uid", "key", "value", "kind", "meta", "created", "updated", "version")


def entry_export_rows(*, owner: AbstractBaseUser | None = None, chunk_size: int = 2000) -> Iterator[tuple]:
    """Every entry as a tuple of EXPORT_FIELDS, streamed in (owner, uid, key) order.

    For operators' backups (manage.py export_memories): owner=None reads every account's entries,
    which no API route may do.
    """
    entries = MemoryEntry.objects.all() if owner is None else MemoryEntry.objects.filter(owner=owner)
    return entries.order_by("owner_id", "uid", "key").values_list(*EXPORT_FIELDS).iterator(chunk_size=chunk_size)
