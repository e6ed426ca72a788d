"""The words one user's entries hold whole, kept per process: what a misspelt query word is checked against.

A typo's variants (hundreds of words one edit away) are looked up here, in memory, instead of in the
database's words index, where one look-up of them all cost 5 to 15 ms at 10,000 entries per user.

Each look-up first reads the user's stamp from the (owner, uid, -updated, ...) index alone: how many
entries the user has and when the latest changed. When it moved on, the entries changed since the kept
latest (less VOCABULARY_OVERLAP, for a write whose transaction ended after a later one's) are read and
their words added; when entries were removed, or more were added than that read found (an import of
older entries), the user's words are read anew. So the words are every word the user's entries hold,
and after a change of an entry's text, also the words it held before, until the user's next removal:
such a word is then taken as held (no variants are sought for it) and as a variant it matches nothing.
Nothing of another account or user is ever read.

The stamp itself (a count over the user's index, 1 to 2 ms at 10,000 entries) is skipped while the
database is unchanged: each look-up takes the database's mark (memories.search.marks: on SQLite the
connection's, on PostgreSQL the server's), and words checked under the same mark are still the user's words.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection

from memories.models import MemoryEntry
from memories.search.marks import Mark, database_mark

# The users whose words a process keeps (the least recently searched are let go first).
VOCABULARY_USERS = 256
# How far before the kept latest change the entries are read again when the stamp moved on.
VOCABULARY_OVERLAP = timedelta(seconds=60)

_TABLE = MemoryEntry._meta.db_table
# Read from the user's index alone (migration 0017's (owner, uid, -updated, expires, guard_flags)).
STAMP_SQL = f"SELECT count(*), max(updated) FROM {_TABLE} WHERE owner_id = %s AND uid = %s"
TEXTS_SQL = f"SELECT key_folded, value_folded FROM {_TABLE} WHERE owner_id = %s AND uid = %s"
CHANGED_SQL = TEXTS_SQL + " AND updated >= %s"


@dataclass
class _Words:
    count: int
    latest: object
    words: set[str] = field(default_factory=set)
    # The database's mark when the words were last checked, or None.
    mark: Mark | None = None


_kept: OrderedDict[tuple[int, str], _Words] = OrderedDict()
_lock = threading.Lock()


def _texts(sql: str, params: list) -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _since(latest: object) -> object:
    """The moment from which entries are read again: latest less the overlap, as the database holds it."""
    if isinstance(latest, datetime):
        return latest - VOCABULARY_OVERLAP
    # SQLite hands back its text ("2026-12-01 19:30:00.123456"), which compares as text.
    return (datetime.fromisoformat(str(latest)) - VOCABULARY_OVERLAP).isoformat(sep=" ")


WordsOf = Callable[[Iterable[str]], set[str]]


def user_words(owner_id: int, uid: str, words_of: WordsOf) -> frozenset[str] | set[str]:
    """Every word the user's entries hold whole (words_of splits their folded keys and values)."""
    key = (owner_id, uid)
    # Taken before the stamp: a write after it moves the next look-up's mark.
    mark = database_mark()
    with _lock:
        kept = _kept.get(key)
        if kept is not None and mark is not None and mark.same(kept.mark):
            _kept.move_to_end(key)
            return kept.words
    with connection.cursor() as cursor:
        cursor.execute(STAMP_SQL, [owner_id, uid])
        count, latest = cursor.fetchone()
    if not count:
        return frozenset()
    with _lock:
        kept = _kept.get(key)
        if kept is not None and (kept.count, kept.latest) == (count, latest):
            kept.mark = mark
            _kept.move_to_end(key)
            return kept.words
    if kept is not None and count >= kept.count and kept.latest is not None:
        changed = _texts(CHANGED_SQL, [owner_id, uid, _since(kept.latest)])
        if count - kept.count <= len(changed):
            words = kept.words | words_of(text for pair in changed for text in pair)
            return _keep(key, _Words(count, latest, words, mark))
    words = words_of(text for pair in _texts(TEXTS_SQL, [owner_id, uid]) for text in pair)
    return _keep(key, _Words(count, latest, words, mark))


def user_words_unchanged(owner_id: int, uid: str) -> frozenset[str] | set[str] | None:
    """The user's words when they are kept and the database has not changed since they were last checked
    (memories.search.marks); otherwise None (ask user_words). Reads no table, and asks the server nothing: on
    PostgreSQL, where the mark is a round trip, it is always None (a search asks user_words only when a word
    is in none of its candidates)."""
    mark = database_mark(round_trip=False)
    if mark is None:
        return None
    with _lock:
        kept = _kept.get((owner_id, uid))
        if kept is None or not mark.same(kept.mark):
            return None
        _kept.move_to_end((owner_id, uid))
        return kept.words


@dataclass(frozen=True)
class KeptWords:
    """A user's words as last kept, and the database's mark when they were last checked (None: unknown)."""

    words: frozenset[str] | set[str]
    mark: Mark | None


def user_words_kept(owner_id: int, uid: str) -> KeptWords | None:
    """The user's words as last kept, however the database changed since (None when none are kept), with the
    mark they were checked under: when the database's mark is still that one, they are the user's words. A
    word missing from them may be a typo, and user_words then says whether it still is. Reads nothing."""
    with _lock:
        kept = _kept.get((owner_id, uid))
        if kept is None:
            return None
        _kept.move_to_end((owner_id, uid))
        return KeptWords(kept.words, kept.mark)


def _keep(key: tuple[int, str], kept: _Words) -> set[str]:
    with _lock:
        _kept[key] = kept
        _kept.move_to_end(key)
        while len(_kept) > VOCABULARY_USERS:
            _kept.popitem(last=False)
    return kept.words


def user_words_clear() -> None:
    """Forget every user's kept words (the next look-up of each reads them from the database)."""
    with _lock:
        _kept.clear()
