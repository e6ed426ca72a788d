"""Reads of entries and their history, each scoped to the account that asks.

Every function takes the owner and returns only that account's rows: there is no read here that
could show one account another's memories, except the all_accounts_* functions at the end, which
take no owner, say so in their name, and serve staff only.

No read shows an entry whose expiry has passed (memories.filters.EntryFilter is applied to every
entry queryset here, and to the search's own statements), except a list the owner asks for with
include_expired; the worker then deletes those entries.
"""

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, F, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from memories import context, search
from memories.filters import EntryFilter, filter_with_kind
from memories.models import AccountPolicy, EntryEmbedding, HeldWrite, MemoryEntry, MemoryEvent, SyncTask
from memories.rows import quote, shown_columns, shown_values

MATCH_RANKED = "ranked"
MATCH_SUBSTRING = "substring"
MATCH_MODES = (MATCH_RANKED, MATCH_SUBSTRING)


# The attribute an account read with its API token carries its policy in (memoryhub.authentication):
# the policy as it was read with the token, None when the account has none.
CARRIED_POLICY_ATTRIBUTE = "memoryhub_carried_policy"
_NOT_CARRIED = object()


def account_policy_carry(*, account: User, policy: AccountPolicy | None) -> None:
    """Let this account object carry its policy as just read (None: it has none), so account_policy reads no more.

    For the token cache (memoryhub.authentication), which reads the policy with the token and forgets
    both whenever a policy changes on this machine.
    """
    setattr(account, CARRIED_POLICY_ATTRIBUTE, policy)


def account_policy_carried(account: User) -> AccountPolicy | None:
    """The policy this account object carries (account_policy_carry), None when it carries none."""
    carried = getattr(account, CARRIED_POLICY_ATTRIBUTE, None)
    return carried if isinstance(carried, AccountPolicy) else None


def account_policy(*, account: User) -> AccountPolicy:
    """The account's policy, or the defaults (an unsaved AccountPolicy) when none was ever set, without writing.

    One query, or none for an account that carries its policy (read with its API token:
    account_policy_carry).
    """
    carried = getattr(account, CARRIED_POLICY_ATTRIBUTE, _NOT_CARRIED)
    policy = AccountPolicy.objects.filter(account=account).first() if carried is _NOT_CARRIED else carried
    return policy if isinstance(policy, AccountPolicy) else AccountPolicy(account=account)


def held_write_list(
    *, owner: User, status: str | None = None, uid: str | None = None, key: str | None = None
) -> QuerySet[HeldWrite]:
    """The account's writes the guard held (of one uid and key when given), newest first, with who made and who
    decided them (one query)."""
    held = HeldWrite.objects.filter(owner=owner)
    if status is not None:
        held = held.filter(status=status)
    if uid is not None and key is not None:
        held = held.filter(uid=uid, key=key)
    return held.select_related("requested_by", "decided_by").order_by("-requested_at", "-id")


def held_write_get(*, owner: User, held_id: int) -> HeldWrite | None:
    return held_write_list(owner=owner).filter(pk=held_id).first()


def user_history_count(*, owner: User, uid: str) -> int:
    """How many history events the account holds about uid (erasure records aside): what an erasure removes."""
    return MemoryEvent.objects.filter(owner=owner, uid=uid).exclude(action=MemoryEvent.Action.ERASE).count()


def live_entries(*, now: datetime | None = None) -> QuerySet[MemoryEntry]:
    """Every entry no expiry has taken from reads yet; narrow it to an owner before use."""
    return MemoryEntry.objects.filter(EntryFilter(now=now or timezone.now()).condition())


def user_entries(*, owner: User | int, uid: str, filters: EntryFilter | None = None) -> QuerySet[MemoryEntry]:
    """One user's entries that the filter lets through (by default: those not expired), unordered.

    The one place a read of a user's entries starts: lists, searches, the hybrid ranking's lookups.
    """
    owner_id = owner if isinstance(owner, int) else owner.pk
    filters = filters if filters is not None else EntryFilter()
    return MemoryEntry.objects.filter(filters.condition(), owner_id=owner_id, uid=uid)


def embeddings_waiting_count(*, owner: User, uid: str) -> int:
    """How many of the user's memories wait for the worker to embed them (new, or changed since): until then a
    search finds them by their words only."""
    return EntryEmbedding.objects.filter(owner=owner, uid=uid, pending=True).count()


def entry_get(*, owner: User, uid: str, key: str) -> MemoryEntry | None:
    """The entry (uid, key) of this account, or None (also when its expiry has passed)."""
    # (owner, uid, key) is unique: no ORDER BY (first() would add one), just the one row.
    found = list(user_entries(owner=owner, uid=uid).filter(key=key)[:1])
    return found[0] if found else None


def entry_list(
    *, owner: User, uid: str, kind: str | None = None, filters: EntryFilter | None = None
) -> QuerySet[MemoryEntry]:
    """One user's entries that the filter lets through, newest first (unevaluated: page it)."""
    return user_entries(owner=owner, uid=uid, filters=filter_with_kind(filters, kind)).order_by("-updated", "-id")


# Filter shapes whose listing SQL a process keeps (the default filter is one; each kind or meta filter's another).
LISTING_SQL_CACHE = 128


@functools.lru_cache(maxsize=LISTING_SQL_CACHE)
def _listing_sql(vendor: str, where: str) -> str:
    """A page of one user's entries newest first, and their count (up to a bound), in one statement.

    where is the filter's SQL (EntryFilter.sql) over the unaliased entry table; the count's subquery
    is not correlated, so the database computes it once.
    """
    table = quote(MemoryEntry._meta.db_table)
    identity = f"{table}.{quote('owner_id')} = %s AND {table}.{quote('uid')} = %s{where}"
    return (
        f"SELECT {shown_columns(table)}, (SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {identity} LIMIT %s) "
        f"AS bounded) FROM {table} WHERE {identity} "
        f"ORDER BY {table}.{quote('updated')} DESC, {table}.{quote('id')} DESC LIMIT %s OFFSET %s"
    )


@dataclass(frozen=True)
class EntryListing:
    """One user's entries that a filter lets through, newest first, as the API pages them (entry_listing)."""

    owner_id: int
    uid: str
    filters: EntryFilter

    def page(self, *, start: int, stop: int, count_limit: int) -> tuple[list[tuple[Any, ...]], int]:
        """The entries from start to stop (exclusive), each as its values of memories.rows.SHOWN_COLUMNS (what
        an entry shows), and how many there are, counted up to count_limit: one statement, of SQL written once
        per filter shape (the same rows and order as entry_list's). An empty page counts nothing: 0."""
        where, where_params = self.filters.sql()
        identity_params = [self.owner_id, self.uid, *where_params]
        with connection.cursor() as cursor:
            cursor.execute(
                _listing_sql(connection.vendor, where),
                [*identity_params, count_limit, *identity_params, max(stop - start, 0), start],
            )
            rows = cursor.fetchall()
        # Each row: the entry's shown columns, then the count.
        return shown_values(rows), rows[0][-1] if rows else 0


def entry_listing(*, owner: User, uid: str, filters: EntryFilter | None = None) -> EntryListing:
    """What entry_list returns, for the API's pages: each page read with its bounded count in one statement,
    without compiling a QuerySet (memories.rows)."""
    return EntryListing(owner_id=owner.pk, uid=uid, filters=filters if filters is not None else EntryFilter())


def entry_find(
    *,
    owner: User,
    uid: str,
    query_text: str,
    kind: str | None = None,
    match: str = MATCH_RANKED,
    filters: EntryFilter | None = None,
) -> "search.RankedMatches | QuerySet[MemoryEntry]":
    """One user's entries that match query_text, sliceable and countable like a QuerySet.

    match=MATCH_RANKED (the default): with embeddings on, the hybrid ranking (memories.search.hybrid:
    the lexical and semantic rankings fused, so entries close in meaning are found too), a
    HybridMatches; with embeddings off (or the provider failing), any of the query's words, best match
    first (memories.search.lexical says the rule), a LexicalMatches. Either way the rest of the word
    matches follow newest first, and entries carry their score. A query of one word of 1 or 2
    characters, and match=MATCH_SUBSTRING, scan for query_text as one substring of the key or value
    instead, newest first (a QuerySet). Every entry that holds query_text is found, among those the
    filter lets through (by default: every entry not expired).
    """
    return entry_search(owner=owner, uid=uid, query_text=query_text, kind=kind, match=match, filters=filters).entries


def entry_search(
    *,
    owner: User,
    uid: str,
    query_text: str,
    kind: str | None = None,
    match: str = MATCH_RANKED,
    filters: EntryFilter | None = None,
    counted: bool = False,
) -> search.SearchAnswer:
    """entry_find's entries, and whether the semantic side took part (and why not, when it failed). counted: the
    caller will count them (a page of results does), so they are counted as they are ranked where that saves a
    statement."""
    filters = filter_with_kind(filters, kind)
    if match == MATCH_RANKED:
        matches = search.LexicalMatches(
            owner_id=owner.pk, uid=uid, kind=None, query_text=query_text, filters=filters, counted=counted
        )
        if matches.parsed.indexed:
            return search.hybrid_search(owner=owner, lexical=matches, query_text=query_text)
    entries = user_entries(owner=owner, uid=uid, filters=filters)
    found = entries.filter(Q(key__icontains=query_text) | Q(value__icontains=query_text)).order_by("-updated", "-id")
    reason = "match=substring" if match == MATCH_SUBSTRING else "a query this short is a substring scan"
    return search.SearchAnswer(entries=found, semantic=search.Semantic.OFF, reason=reason)


# The context block is read every turn, so its plain reads are written in SQL: compiling the same
# statements through the ORM, and making model instances of the rows, cost more than running them.
# Only the columns the block shows are read.
_ENTRIES = MemoryEntry._meta.db_table
# An entry whose expiry has passed is in no read of the block (nor in its count, so the ETag changes with it).
CONTEXT_LIVE_SQL = "(expires IS NULL OR expires > %s)"
CONTEXT_TOTALS_SQL = (
    f"SELECT count(*), max(updated) FROM {_ENTRIES} WHERE owner_id = %s AND uid = %s AND {CONTEXT_LIVE_SQL}{{flagged}}"
)
# The entries by id, the user's own only. On SQLite the unary + keeps the planner on the primary key
# (it would otherwise walk all of the user's (owner, uid, key) index to find a few ids).
CONTEXT_BY_ID_SQL = (
    f'SELECT id, "key", kind, value, version, updated FROM {_ENTRIES} WHERE {{ids}} AND {{scope}}{{flagged}}'
)
CONTEXT_SCOPE_SQL = {"sqlite": "+owner_id = %s AND +uid = %s", "postgresql": "owner_id = %s AND uid = %s"}
_CONTEXT_LENGTH = 'length("key") + length(kind) + length(value)'
_CONTEXT_COLUMNS = '"key", kind, value, version, updated, id'
_CONTEXT_ORDER = "ORDER BY updated DESC, id DESC"
CONTEXT_AFTER_SQL = "AND (updated < %s OR (updated = %s AND id < %s)) "
# Whether the account's policy lets flagged entries in (no row: the policy's default, False).
CONTEXT_POLICY_SQL = f"SELECT context_includes_flagged FROM {AccountPolicy._meta.db_table} WHERE account_id = %s"
# Added to each read of the block unless the account's policy lets flagged entries in (memories.guard).
CONTEXT_UNFLAGGED_SQL = " AND guard_flags = ''"
# The newest memories short enough for the room, after a row already read.
CONTEXT_NEWEST_SQL = (
    f"SELECT {_CONTEXT_COLUMNS} FROM {_ENTRIES} WHERE owner_id = %s AND uid = %s AND {CONTEXT_LIVE_SQL}{{flagged}} "
    f"AND {_CONTEXT_LENGTH} <= %s {{after}}{_CONTEXT_ORDER} LIMIT %s"
)
# Of the next few memories after a row already read, those short enough for the room left.
CONTEXT_FILLERS_SQL = (
    f"SELECT {_CONTEXT_COLUMNS} FROM (SELECT {_CONTEXT_COLUMNS} FROM {_ENTRIES} WHERE owner_id = %s AND uid = %s "
    f"AND {CONTEXT_LIVE_SQL}{{flagged}} {{after}}{_CONTEXT_ORDER} LIMIT %s) AS following "
    f"WHERE {_CONTEXT_LENGTH} <= %s {_CONTEXT_ORDER}"
)


def _stored_datetime(value: object) -> datetime | None:
    """A datetime as the database cursor returns it (SQLite: text) made an aware datetime."""
    if value is None or isinstance(value, datetime):
        return value
    moment = datetime.fromisoformat(str(value))
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


def entry_trash(*, owner: User, uid: str | None = None) -> QuerySet[MemoryEvent]:
    """This account's deleted memories that can be restored: the deletion event of each (uid, key) whose
    latest change is a delete (so no live entry has that key), newest deletion first, actors joined.

    uid narrows to one user, forgotten ones included (their uid has no live entry left).
    """
    latest = (
        MemoryEvent.objects.filter(owner=owner, uid=OuterRef("uid"), key=OuterRef("key"))
        .exclude(action=MemoryEvent.Action.REJECT)
        .order_by("-id")
    )
    deletions = MemoryEvent.objects.filter(owner=owner, action=MemoryEvent.Action.DELETE)
    if uid is not None:
        deletions = deletions.filter(uid=uid)
    return (
        deletions.annotate(latest_id=Subquery(latest.values("id")[:1]))
        .filter(id=F("latest_id"))
        .select_related("actor")
        .order_by("-at", "-id")
    )


def _context_updated(updated: object) -> datetime:
    updated_at = _stored_datetime(updated)
    assert updated_at is not None  # the column is NOT NULL
    return updated_at


def _context_ranked(*, owner: User, uid: str, query_text: str, now: datetime) -> list[tuple[int, str]]:
    """The ids of the memories entry_find ranks first for query_text, in its order, each with its reason:
    REASON_RELEVANT when it passes the search's relevance cut-off (a hybrid search's `relevant`; a
    lexical or substring match holds the query's words, so it does), else REASON_NEAREST."""
    found = entry_find(owner=owner, uid=uid, query_text=query_text, filters=EntryFilter(now=now))
    limit = context.CONTEXT_RELEVANT_LIMIT
    if isinstance(found, search.HybridMatches):
        judged = found.judged_ids(limit)
    elif isinstance(found, QuerySet):
        judged = [(entry_id, True) for entry_id in found.values_list("pk", flat=True)[:limit]]
    else:
        judged = [(entry_id, True) for entry_id in found.entry_ids(limit)]
    return [
        (entry_id, context.REASON_RELEVANT if relevant else context.REASON_NEAREST) for entry_id, relevant in judged
    ]


def _context_relevant(
    builder: context.BlockBuilder, *, owner: User, uid: str, ranked: list[tuple[int, str]], flagged: str
) -> None:
    """Offer the memories the query ranked first (_context_ranked), each with its reason: their columns
    in one read (the user's own rows only)."""
    if not ranked:
        return
    condition, ids_params = search.ids_in([entry_id for entry_id, _ in ranked])
    sql = CONTEXT_BY_ID_SQL.format(ids=condition, scope=CONTEXT_SCOPE_SQL[connection.vendor], flagged=flagged)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*ids_params, owner.pk, uid])
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    for entry_id, reason in ranked:
        if entry_id in rows:
            key, kind, value, version, updated = rows[entry_id]
            candidate = context.Candidate(key, kind, value, version, _context_updated(updated))
            builder.offer(candidate, reason=reason)


# key, kind, value, version, updated (text on SQLite), id
ContextRow = tuple[str, str, str, int, str | datetime, int]


def _after(row: ContextRow | None) -> tuple[str, list[str | int | datetime]]:
    """The SQL that keeps the rows after row (newest first), and its parameters; none for no row."""
    if row is None:
        return "", []
    return CONTEXT_AFTER_SQL, [row[4], row[4], row[5]]


def _context_newest(
    builder: context.BlockBuilder, *, owner: User, uid: str, flagged: str, live_after: str | datetime
) -> None:
    """Offer the newest memories until the block is full (the rule: memories.context).

    1. Newest first, those short enough for the room left (an item is never shorter than its key,
       kind and value with the item's punctuation), read a few rows at a time, so the rows past a
       full block are never read, until one does not fit.
    2. Then, of the CONTEXT_FILL_WINDOW memories after the last one read, those short enough for
       the room left; again after the last one a window added, until a window adds none.
    """

    def offer(row: ContextRow) -> bool:
        return builder.offer(context.Candidate(*row[:4], _context_updated(row[4])), reason=context.REASON_RECENT)

    chunk_size, last_read, skipped = context.CONTEXT_SCAN_CHUNK, None, False
    with connection.cursor() as cursor:
        while not builder.full and not skipped:
            after, after_params = _after(last_read)
            cursor.execute(
                CONTEXT_NEWEST_SQL.format(after=after, flagged=flagged),
                [owner.pk, uid, live_after, builder.room - context.ITEM_OVERHEAD, *after_params, chunk_size],
            )
            read = 0
            while not skipped and not builder.full and (rows := cursor.fetchmany(context.CONTEXT_FETCH_SIZE)):
                for row in rows:
                    read += 1
                    # A memory shown already (as relevant) is passed over.
                    if row[0] not in builder.keys and not offer(row):
                        skipped = True
                        break
                    last_read = row
                    if builder.full:
                        break
            if not skipped and read < chunk_size:
                return  # every memory that could fit was read
            chunk_size *= 2
        while not builder.full:
            after, after_params = _after(last_read)
            cursor.execute(
                CONTEXT_FILLERS_SQL.format(after=after, flagged=flagged),
                [
                    owner.pk,
                    uid,
                    live_after,
                    *after_params,
                    context.CONTEXT_FILL_WINDOW,
                    builder.room - context.ITEM_OVERHEAD,
                ],
            )
            added = [row for row in cursor.fetchall() if row[0] not in builder.keys and offer(row)]
            if not added:
                return
            last_read = added[-1]


def context_block(
    *, owner: User, uid: str, budget: int = context.CONTEXT_DEFAULT_BUDGET, query_text: str = ""
) -> context.ContextBlock:
    """The prompt-ready block of uid's memories within budget characters (format: memories.context).

    With query_text, up to CONTEXT_RELEVANT_LIMIT memories found by entry_find (the ranked search)
    come first, each REASON_RELEVANT or REASON_NEAREST as the search's relevance cut-off judges it;
    the newest memories fill the rest (REASON_RECENT). Callers check budget and query_text
    (CONTEXT_MIN_BUDGET to CONTEXT_MAX_BUDGET, at most CONTEXT_QUERY_MAX_LENGTH characters).
    Two or three queries without query_text (a few more when a large budget reads several chunks),
    two to four more with it (the search's, and one for the columns of what it found), and one for
    the account's policy: entries the write guard flagged are left out unless it includes them.
    """
    now = timezone.now()
    # One moment for every read of the block: an entry expiring meanwhile is in all of them or none.
    live_after: str | datetime = connection.ops.adapt_datetimefield_value(now) or now
    with connection.cursor() as cursor:
        # the account's policy (read as account_policy would, without making a model of it)
        cursor.execute(CONTEXT_POLICY_SQL, [owner.pk])
        policy = cursor.fetchone()
        flagged = "" if policy is not None and policy[0] else CONTEXT_UNFLAGGED_SQL
        # how many memories the user has and when the newest changed (the header and the ETag)
        cursor.execute(CONTEXT_TOTALS_SQL.format(flagged=flagged), [owner.pk, uid, live_after])
        total, last_updated = cursor.fetchone()
    ranked = _context_ranked(owner=owner, uid=uid, query_text=query_text, now=now) if total and query_text else []
    nearest = any(reason == context.REASON_NEAREST for _, reason in ranked)
    builder = context.BlockBuilder(uid=uid, budget=budget, total=total, ranked=bool(query_text), nearest=nearest)
    _context_relevant(builder, owner=owner, uid=uid, ranked=ranked, flagged=flagged)
    if total:
        _context_newest(builder, owner=owner, uid=uid, flagged=flagged, live_after=live_after)
    last_updated = _stored_datetime(last_updated)
    text = builder.text()
    return context.ContextBlock(
        uid=uid,
        budget=budget,
        query_text=query_text,
        text=text,
        entries=tuple(builder.used),
        total=total,
        etag=context.block_etag(
            text=text,
            used=builder.used,
            budget=budget,
            query_text=query_text,
            total=total,
            last_updated=last_updated,
        ),
    )


def entry_find_sorted(
    *,
    owner: User,
    uid: str,
    query_text: str,
    kind: str | None = None,
    order_by: tuple[str, ...],
    filters: EntryFilter | None = None,
) -> QuerySet[MemoryEntry]:
    """The entries entry_find finds, in another order (the dashboard's sortable columns)."""
    filters = filter_with_kind(filters, kind)
    found = entry_find(owner=owner, uid=uid, query_text=query_text, filters=filters)
    if isinstance(found, search.HybridMatches):
        found = found.queryset()
    elif isinstance(found, search.LexicalMatches):
        found = search.matches(owner_id=owner.pk, uid=uid, kind=None, query=found.query, filters=filters)
    return found.order_by(*order_by)


def user_list(*, owner: User, search: str | None = None) -> QuerySet:
    """The account's uids, each with its number of entries and last update, most recent first.

    Rows are dicts: {"uid", "entries", "last_updated"}.
    """
    entries = live_entries().filter(owner=owner)
    if search:
        entries = entries.filter(uid__icontains=search)
    return (
        entries.values("uid")
        .annotate(entries=Count("id"), last_updated=Max("updated"))
        .order_by("-last_updated", "uid")
    )


def uid_exists(*, owner: User, uid: str) -> bool:
    return user_entries(owner=owner, uid=uid).exists()


def entry_history(*, owner: User, uid: str, key: str) -> QuerySet[MemoryEvent]:
    """Every recorded change to (uid, key), newest first, including changes to since-deleted entries, and the
    decisions on its held writes (the held write joined: a rejection's refused value is there)."""
    return (
        MemoryEvent.objects.filter(owner=owner, uid=uid, key=key)
        .select_related("actor", "held_write__requested_by")
        .order_by("-id")
    )


def entry_deleted_version(*, owner: User, uid: str, key: str) -> int | None:
    """The version (uid, key) was deleted at when its latest change is a deletion, else None."""
    last = (
        MemoryEvent.objects.filter(owner=owner, uid=uid, key=key)
        .exclude(action=MemoryEvent.Action.REJECT)
        .order_by("-id")
        .values("action", "version")
        .first()
    )
    return last["version"] if last is not None and last["action"] == MemoryEvent.Action.DELETE else None


def owner_counts(*, owner: User) -> dict[str, int]:
    """How many entries and distinct uids the account holds."""
    totals = live_entries().filter(owner=owner).aggregate(entries=Count("id"), users=Count("uid", distinct=True))
    return {"entries": totals["entries"], "users": totals["users"]}


class KindCount(TypedDict):
    kind: str
    entries: int


def kind_counts(*, owner: User, uid: str | None = None) -> list[KindCount]:
    """The kinds the account uses (of one uid when given), each with its number of entries, most used first.

    Rows are dicts: {"kind", "entries"}.
    """
    entries = live_entries().filter(owner=owner)
    if uid is not None:
        entries = entries.filter(uid=uid)
    return list(entries.values("kind").annotate(entries=Count("id")).order_by("-entries", "kind"))


def change_count(*, owner: User, since: datetime) -> int:
    """How many changes (creations, updates, deletions) the account's entries had since that moment."""
    return MemoryEvent.objects.filter(owner=owner, at__gte=since).exclude(action=MemoryEvent.Action.REJECT).count()


# Staff only: the dashboard's "all accounts" switch. Callers check is_staff before calling these.


def all_accounts_held_writes(*, status: str | None = HeldWrite.Status.PENDING) -> QuerySet[HeldWrite]:
    """The review queue: every account's held writes (pending ones by default), oldest first, accounts joined."""
    held = HeldWrite.objects.all() if status is None else HeldWrite.objects.filter(status=status)
    return held.select_related("owner", "requested_by", "decided_by").order_by("requested_at", "id")


def all_accounts_counts(*, since: datetime) -> dict:
    """Every account's entries, users (distinct account and uid pairs), kinds and changes since that moment."""
    entries = live_entries()
    totals = entries.aggregate(entries=Count("id"))
    return {
        "entries": totals["entries"],
        "users": entries.values("owner_id", "uid").distinct().count(),
        "kinds": list(entries.values("kind").annotate(entries=Count("id")).order_by("-entries", "kind")),
        "changes": MemoryEvent.objects.filter(at__gte=since).exclude(action=MemoryEvent.Action.REJECT).count(),
    }


def all_accounts_user_list(*, search: str | None = None) -> QuerySet:
    """Every account's uids with counts and last update, most recent first.

    Rows are dicts: {"owner__username", "uid", "entries", "last_updated"}.
    """
    entries = live_entries()
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


def sync_status(*, owner: User | None) -> SyncStatus:
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


EXPORT_FIELDS = (
    "owner__username", "uid", "key", "value", "kind", "meta", "privacy", "created", "updated", "version", "expires",
)  # fmt: skip


def entry_export_rows(
    *, owner: User | None = None, chunk_size: int = 2000, include_expired: bool = False
) -> Iterator[tuple]:
    """Every entry (not expired, unless include_expired) as a tuple of EXPORT_FIELDS, in (owner, uid, key) order.

    For operators' backups (manage.py export_memories): owner=None reads every account's entries,
    which no API route may do.
    """
    entries = MemoryEntry.objects.all() if include_expired else live_entries()
    if owner is not None:
        entries = entries.filter(owner=owner)
    return entries.order_by("owner_id", "uid", "key").values_list(*EXPORT_FIELDS).iterator(chunk_size=chunk_size)


@contextmanager
def export_snapshot() -> Iterator[None]:
    """Run the reads inside one snapshot of the database, so a backup's entries and history agree.

    PostgreSQL: a REPEATABLE READ, READ ONLY transaction. SQLite: a deferred transaction, which in WAL
    mode reads one snapshot and takes no write lock, so writers carry on meanwhile. Inside a
    transaction already open (a test's), the reads run in that one.
    """
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor == "postgresql":
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield
        return
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("COMMIT")


EVENT_EXPORT_FIELDS = (
    "owner__username", "uid", "key", "action", "version", "value_before", "value_after", "kind_before", "kind_after",
    "meta_before", "meta_after", "privacy_before", "privacy_after", "created_before", "entries_erased",
    "actor__username", "at", "held_write_id",
)  # fmt: skip

# A held line of a full backup: a write the guard held, pending or decided (exchange.backup_held_line). Its id
# names it within the backup, for the history events its decision wrote.
HELD_EXPORT_FIELDS = (
    "id", "owner__username", "uid", "key", "value", "kind", "meta", "privacy", "ttl", "expires", "clears_expiry",
    "expected_version", "guard_flags", "requested_by__username", "requested_at", "status", "decided_by__username",
    "decided_at", "entry_version",
)  # fmt: skip


def repeated_versions(*, owner: User | None = None, limit: int = 5) -> list[tuple[str, str, str, int]]:
    """(account, uid, key, version) of keys whose history holds two creates or updates at one version, which
    migration 0024 left as they were (a race before it could write them); at most limit of them."""
    changes = MemoryEvent.objects.filter(action__in=[MemoryEvent.Action.CREATE, MemoryEvent.Action.UPDATE])
    if owner is not None:
        changes = changes.filter(owner=owner)
    repeated = (
        changes.values("owner__username", "uid", "key", "version")
        .annotate(times=Count("id"))
        .filter(times__gt=1)
        .order_by("owner__username", "uid", "key", "version")
        .values_list("owner__username", "uid", "key", "version")
    )
    return list(repeated[:limit])


def held_export_rows(*, owner: User | None = None) -> QuerySet[HeldWrite, tuple]:
    """Every write the guard held, pending or decided, as a tuple of HELD_EXPORT_FIELDS, oldest first: for
    operators' backups with history (manage.py export_memories --with-history); owner=None reads every
    account's."""
    held = HeldWrite.objects.all() if owner is None else HeldWrite.objects.filter(owner=owner)
    return held.order_by("id").values_list(*HELD_EXPORT_FIELDS)


# A policy line of a full backup: the account and its rules (exchange.backup_policy_line).
POLICY_EXPORT_FIELDS = ("account__username", "default_privacy", "guard_mode", "context_includes_flagged")


def policy_export_rows(*, owner: User | None = None) -> QuerySet[AccountPolicy, tuple]:
    """Every account policy (owner=None) or owner's alone, as tuples of POLICY_EXPORT_FIELDS, by account: for
    operators' backups with history (manage.py export_memories --with-history)."""
    policies = AccountPolicy.objects.all() if owner is None else AccountPolicy.objects.filter(account=owner)
    return policies.order_by("account_id").values_list(*POLICY_EXPORT_FIELDS)


def event_export_rows(*, owner: User | None = None, chunk_size: int = 2000) -> Iterator[tuple]:
    """Every history event as a tuple of EVENT_EXPORT_FIELDS, streamed oldest first (in the order written).

    For operators' backups with history (manage.py export_memories --with-history): owner=None reads
    every account's history, which no API route may do. The actor is a username, None when that
    account was deleted.
    """
    events = MemoryEvent.objects.all() if owner is None else MemoryEvent.objects.filter(owner=owner)
    return events.order_by("id").values_list(*EVENT_EXPORT_FIELDS).iterator(chunk_size=chunk_size)
