"""Vectors in the database: the only code that writes EntryEmbedding rows.

The services call `embedding_mark_stale(entries)` in the transaction that changes entries' text: one
INSERT ... ON CONFLICT per 500 entries, no model involved, so a write never waits for one. The worker
calls `embeddings_process_pending(limit=...)`: it claims pending rows with a lease (like the sync
outbox: a conditional UPDATE that takes only rows unclaimed or whose lease ran out), embeds the
entries' current text outside any transaction, and stores each vector only if no newer change marked
the row meanwhile (that one stays pending for the next pass).
"""

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memories.embeddings.base import EmbeddingError, EmbeddingProvider, embeddings_remote, entry_text, get_provider
from memories.models import EntryEmbedding, MemoryEntry, Privacy

logger = logging.getLogger(__name__)

MARK_CHUNK = 500
DEFAULT_BATCH = 256
CLAIM_LEASE = timedelta(minutes=2)
VECTOR_DTYPE = np.dtype("<f4")
# How the openai provider names the vectors it makes (memories.embeddings.openai).
REMOTE_MODEL_PREFIX = "openai:"


# What a vector row already there takes when its entry's text changes (embedding_wanted_row, _mark_sql): the
# version wanted, pending again, and no worker's claim (one may be embedding the old text).
WANTED_AGAIN = ("wanted_version", "pending", "claimed_until")


@functools.lru_cache(maxsize=8)
def _mark_sql(vendor: str, rows: int) -> str:
    """INSERT ... ON CONFLICT (the same text on SQLite and PostgreSQL): a changed entry's row turns pending."""
    quote = connection.ops.quote_name
    table = quote(EntryEmbedding._meta.db_table)
    columns = ("entry_id", "owner_id", "uid", "model", "dimension", "wanted_version", "pending")
    one_row = "(%s, %s, %s, '', 0, %s, %s)"
    # claimed_until is not among the columns inserted: excluded.claimed_until is its default, NULL.
    updates = ", ".join(f"{quote(column)} = excluded.{quote(column)}" for column in WANTED_AGAIN)
    return (
        f"INSERT INTO {table} ({', '.join(quote(column) for column in columns)}) VALUES {', '.join([one_row] * rows)} "
        f"ON CONFLICT ({quote('entry_id')}) DO UPDATE SET {updates}"
    )


def _vector_wanted(entry: MemoryEntry) -> bool:
    """Whether an entry gets a vector: not with embeddings off, nor a local entry with a remote provider (it is
    found by its words alone)."""
    return settings.MEMORYHUB_EMBEDDINGS != "off" and not (embeddings_remote() and entry.privacy == Privacy.LOCAL)


def embedding_wanted_row(entry: MemoryEntry) -> EntryEmbedding | None:
    """The pending vector row an entry gets when created, or when its text changes (a row already there takes
    WANTED_AGAIN from it), for the caller to write with the entry; None when it gets no vector. Its entry is
    set on insert."""
    if not _vector_wanted(entry):
        return None
    return EntryEmbedding(owner_id=entry.owner_id, uid=entry.uid, wanted_version=entry.version, pending=True)


def embedding_mark_stale(entries: Sequence[MemoryEntry]) -> None:
    """Mark these entries' vectors as wanted again: call it in the transaction that changed their text.

    With embeddings off it returns at once, with no query (`manage.py embed --reembed` catches up when
    they are turned on). Entries inserted without their ids being read (the import) are looked up by
    their Honcho session id, one query per 500. With a remote provider, local entries are left out:
    they get no vector, and are found by their words alone.
    """
    entries = [entry for entry in entries if _vector_wanted(entry)]
    if not entries:
        return
    missing = [entry.honcho_session_id for entry in entries if entry.pk is None]
    ids: dict[str, int] = {}
    for start in range(0, len(missing), MARK_CHUNK):
        session_ids = missing[start : start + MARK_CHUNK]
        ids.update(MemoryEntry.objects.filter(honcho_session_id__in=session_ids).values_list("honcho_session_id", "id"))
    rows = [
        (entry.pk if entry.pk is not None else ids[entry.honcho_session_id], entry.owner_id, entry.uid, entry.version)
        for entry in entries
    ]
    with connection.cursor() as cursor:
        for start in range(0, len(rows), MARK_CHUNK):
            row_chunk = rows[start : start + MARK_CHUNK]
            parameters: list = []
            for entry_id, owner_id, uid, version in row_chunk:
                parameters += [entry_id, owner_id, uid, version, True]
            cursor.execute(_mark_sql(connection.vendor, len(row_chunk)), parameters)


def embedding_withdraw(entries: Sequence[MemoryEntry]) -> None:
    """Drop the vectors a remote provider made of these entries, just made local: call it in that transaction.

    With a remote provider every vector row of theirs goes (made or wanted); otherwise only the rows a
    remote model made (a vector of the local model stays: it never left the machine).
    """
    ids = [entry.pk for entry in entries if entry.pk is not None]
    if not ids:
        return
    rows = EntryEmbedding.objects.filter(entry_id__in=ids)
    if not embeddings_remote():
        rows = rows.filter(model__startswith=REMOTE_MODEL_PREFIX)
    rows.delete()


@dataclass(frozen=True)
class Claimed:
    entry_id: int
    wanted_version: int
    text: str


def _claim(limit: int, *, remote: bool, owner: User | None = None, uid: str | None = None) -> list[Claimed]:
    """Take up to `limit` pending rows for this pass (of one account's user, when given), with the
    entries' text as it is now.

    remote: the provider sends texts off the machine, so local entries are never taken (their
    pending rows, left from another provider, are dropped).
    """
    now = timezone.now()
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    if owner is not None and uid is not None:
        free &= Q(owner=owner, uid=uid)
    with transaction.atomic():
        pending = EntryEmbedding.objects.filter(free, pending=True)
        if remote:
            pending.filter(entry__privacy=Privacy.LOCAL).delete()
            pending = pending.exclude(entry__privacy=Privacy.LOCAL)
        candidates = pending.order_by("entry_id")
        if connection.features.has_select_for_update_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True)
        candidate_ids = list(candidates.values_list("entry_id", flat=True)[:limit])
        if not candidate_ids:
            return []
        EntryEmbedding.objects.filter(free, entry_id__in=candidate_ids, pending=True).update(
            claimed_until=now + CLAIM_LEASE
        )
        claimed = MemoryEntry.objects.filter(id__in=candidate_ids, embedding__claimed_until=now + CLAIM_LEASE)
        if remote:
            # the entry's privacy as it is now, read in the same statement as its text
            claimed = claimed.exclude(privacy=Privacy.LOCAL)
        rows = claimed.values_list("id", "embedding__wanted_version", "key", "value")
        return [Claimed(entry_id, wanted, entry_text(key=key, value=value)) for entry_id, wanted, key, value in rows]


@functools.lru_cache(maxsize=2)
def _store_sql(vendor: str) -> str:
    quote = connection.ops.quote_name
    assigned = ("vector", "model", "dimension", "embedded_version", "embedded_at", "pending", "claimed_until")
    assignments = ", ".join(f"{quote(column)} = %s" for column in assigned)
    return (
        f"UPDATE {quote(EntryEmbedding._meta.db_table)} SET {assignments} "
        f"WHERE {quote('entry_id')} = %s AND {quote('wanted_version')} = %s"
    )


def _store(claimed: list[Claimed], vectors: np.ndarray, provider: EmbeddingProvider) -> int:
    """Store the vectors of rows still at the version claimed (a newer change keeps its row pending).

    One prepared UPDATE run for every row (executemany): the ORM's bulk_update compiles a CASE per
    row and field, which cost 35 ms per entry here.

    On PostgreSQL the rows are locked first, skipping any a writer holds (it is changing that entry's text,
    so the vector made would not be its own; the claim runs out and the row is embedded again): the worker
    never waits on a writer, so a write marking several entries (a batch) and the worker storing several
    vectors never wait on each other in a circle, which PostgreSQL ends by failing one of them.
    """
    if connection.features.has_select_for_update_skip_locked:
        with transaction.atomic():
            free = set(
                EntryEmbedding.objects.filter(entry_id__in=[item.entry_id for item in claimed])
                .order_by("entry_id")
                .select_for_update(skip_locked=True)
                .values_list("entry_id", flat=True)
            )
            kept = [(item, vector) for item, vector in zip(claimed, vectors, strict=True) if item.entry_id in free]
            return _store_rows([item for item, _ in kept], [vector for _, vector in kept], provider)
    return _store_rows(claimed, list(vectors), provider)


def _store_rows(claimed: list[Claimed], vectors: "list[np.ndarray] | np.ndarray", provider: EmbeddingProvider) -> int:
    if not claimed:
        return 0
    moment = connection.ops.adapt_datetimefield_value(timezone.now())
    parameters = [
        (
            vector.astype(VECTOR_DTYPE).tobytes(),
            provider.name,
            len(vector),
            item.wanted_version,
            moment,
            False,
            None,
            item.entry_id,
            item.wanted_version,
        )
        for item, vector in zip(claimed, vectors, strict=True)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(_store_sql(connection.vendor), parameters)
        return max(cursor.rowcount, 0)


def _release(claimed: list[Claimed]) -> None:
    EntryEmbedding.objects.filter(entry_id__in=[item.entry_id for item in claimed]).update(claimed_until=None)


def embeddings_process_pending(*, limit: int = DEFAULT_BATCH, owner: User | None = None, uid: str | None = None) -> int:
    """Embed up to `limit` pending entries in one batch (only those of owner's uid, when both are
    given); the number of vectors stored.

    0 when embeddings are off or nothing is pending. An EmbeddingError (the endpoint down, the
    model missing) releases the claim and is raised to the caller, which decides when to try again.
    """
    provider = get_provider()
    if provider is None:
        return 0
    claimed = _claim(limit, remote=provider.remote, owner=owner, uid=uid)
    if not claimed:
        return 0
    try:
        vectors = provider.embed([item.text for item in claimed])
    except EmbeddingError:
        _release(claimed)
        raise
    return _store(claimed, vectors, provider)


def embeddings_pending_count() -> int:
    return EntryEmbedding.objects.filter(pending=True).count()


def embeddings_reembed() -> int:
    """Mark every entry whose vector was not made by the current provider (or that has none) pending.

    A remote provider leaves local entries out (and their vectors of another model go).

    The one command after a model change or after turning embeddings on: `manage.py embed --reembed`,
    then the worker (or `embed --once`) makes the vectors. Returns the number of entries marked.
    """
    provider = get_provider()
    if provider is None:
        return 0
    marked = 0
    with transaction.atomic():
        others = EntryEmbedding.objects.filter(pending=False).exclude(model=provider.name)
        if provider.remote:
            others.filter(entry__privacy=Privacy.LOCAL).delete()
            others = others.exclude(entry__privacy=Privacy.LOCAL)
        marked += others.update(pending=True, claimed_until=None)
        unembedded = MemoryEntry.objects.filter(embedding__isnull=True)
        if provider.remote:
            unembedded = unembedded.exclude(privacy=Privacy.LOCAL)
        last_id = 0
        while True:
            missing = list(
                unembedded.filter(id__gt=last_id)
                .order_by("id")
                .only("id", "owner_id", "uid", "version", "honcho_session_id", "privacy")[:MARK_CHUNK]
            )
            if not missing:
                break
            embedding_mark_stale(missing)
            marked += len(missing)
            last_id = missing[-1].id
    return marked


def user_vectors(*, owner: User, uid: str, model: str) -> tuple[np.ndarray, np.ndarray]:
    """One user's vectors made by `model`: (entry ids, matrix with one row per entry)."""
    rows = list(
        EntryEmbedding.objects.filter(owner=owner, uid=uid, model=model, vector__isnull=False).values_list(
            "entry_id", "vector"
        )
    )
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(bytes(row[1] or b"") for row in rows), dtype=VECTOR_DTYPE).reshape(len(ids), -1)
    return ids, matrix
