"""Reads of entries and their history, each scoped to the account that asks.

Every function takes the owner and returns only that account's rows: there is no read here that
could show one account another's memories, except the all_accounts_* functions at the end, which
take no owner, say so in their name, and serve staff only.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Max, Min, Q, QuerySet
from django.utils import timezone

from memories import search
from memories.models import MemoryEntry, MemoryEvent, SyncTask

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
    return MemoryEvent.objects.filter(owner=owner, uid=uid, key=key).select_related("actor").order_by("-id")


def owner_counts(*, owner: AbstractBaseUser) -> dict[str, int]:
    """How many entries and distinct uids the account holds."""
    totals = MemoryEntry.objects.filter(owner=owner).aggregate(entries=Count("id"), users=Count("uid", distinct=True))
    return {"entries": totals["entries"], "users": totals["users"]}


def kind_counts(*, owner: AbstractBaseUser, uid: str | None = None) -> list[dict]:
    """The kinds the account uses (of one uid when given), each with its number of entries, most used first.

    Rows are dicts: {"kind", "entries"}.
    """
    entries = MemoryEntry.objects.filter(owner=owner)
    if uid is not None:
        entries = entries.filter(uid=uid)
    return list(entries.values("kind").annotate(entries=Count("id")).order_by("-entries", "kind"))


def change_count(*, owner: AbstractBaseUser, since: datetime) -> int:
    """How many changes (creations, updates, deletions) the account's entries had since that moment."""
    return MemoryEvent.objects.filter(owner=owner, at__gte=since).count()


# Staff only: the dashboard's "all accounts" switch. Callers check is_staff before calling these.


def all_accounts_counts(*, since: datetime) -> dict:
    """Every account's entries, users (distinct account and uid pairs), kinds and changes since that moment."""
    totals = MemoryEntry.objects.aggregate(entries=Count("id"))
    return {
        "entries": totals["entries"],
        "users": MemoryEntry.objects.values("owner_id", "uid").distinct().count(),
        "kinds": list(MemoryEntry.objects.values("kind").annotate(entries=Count("id")).order_by("-entries", "kind")),
        "changes": MemoryEvent.objects.filter(at__gte=since).count(),
    }


def all_accounts_user_list(*, search: str | None = None) -> QuerySet:
    """Every account's uids with counts and last update, most recent first.

    Rows are dicts: {"owner__username", "uid", "entries", "last_updated"}.
    """
    entries = MemoryEntry.objects.all()
    if search:
        entries = entries.filter(uid__icontains=search)
    return (
        entries.values("owner__username", "uid")
        .annotate(entries=Count("id"), last_updated=Max("updated"))
        .order_by("-last_updated", "owner__username", "uid")
    )


@dataclass(frozen=True)
class SyncStatus:
    """The sync outbox as one account (or, for owner None, the whole hub) sees it."""

    enabled: bool
    scope: str  # "account" or "hub"
    pending: int
    failed: int
    oldest_pending_seconds: float | None
    last_success: datetime | None
    last_error: str
    last_error_at: datetime | None


def sync_status(*, owner: AbstractBaseUser | None) -> SyncStatus:
    """Pending and failed tasks, the age of the oldest pending change, the last push that worked and
    the last error, of owner's entries, or of the whole hub when owner is None (the operator's view).
    Two queries."""
    tasks = SyncTask.objects.all() if owner is None else SyncTask.objects.filter(owner=owner)
    # 1. counts, oldest pending change, last success
    totals = tasks.aggregate(
        pending=Count("id", filter=Q(status=SyncTask.Status.PENDING)),
        failed=Count("id", filter=Q(status=SyncTask.Status.FAILED)),
        oldest_pending=Min("pending_since", filter=Q(status=SyncTask.Status.PENDING)),
        last_success=Max("done_at"),
    )
    # 2. the newest error
    newest_error = (
        tasks.exclude(last_error_at=None).order_by("-last_error_at").values("last_error", "last_error_at").first()
    )
    oldest_pending = totals["oldest_pending"]
    return SyncStatus(
        enabled=settings.MEMORYHUB_HONCHO_SYNC,
        scope="hub" if owner is None else "account",
        pending=totals["pending"],
        failed=totals["failed"],
        oldest_pending_seconds=round((timezone.now() - oldest_pending).total_seconds(), 3) if oldest_pending else None,
        last_success=totals["last_success"],
        last_error=newest_error["last_error"] if newest_error else "",
        last_error_at=newest_error["last_error_at"] if newest_error else None,
    )


EXPORT_FIELDS = ("owner__username", "uid", "key", "value", "kind", "meta", "created", "updated", "version")


def entry_export_rows(*, owner: AbstractBaseUser | None = None, chunk_size: int = 2000) -> Iterator[tuple]:
    """Every entry as a tuple of EXPORT_FIELDS, streamed in (owner, uid, key) order.

    For operators' backups (manage.py export_memories): owner=None reads every account's entries,
    which no API route may do.
    """
    entries = MemoryEntry.objects.all() if owner is None else MemoryEntry.objects.filter(owner=owner)
    return entries.order_by("owner_id", "uid", "key").values_list(*EXPORT_FIELDS).iterator(chunk_size=chunk_size)
