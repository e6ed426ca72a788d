"""Search over one user's entries: the lexical ranking (lexical.py); vectors and their fusion join it here."""

from memories.search.lexical import (
    ENTRY_TABLE,
    FTS_TABLE,
    KEY_WEIGHT,
    MIN_INDEXED_LENGTH,
    RANK_ALL_LIMIT,
    VALUE_WEIGHT,
    fts_phrase,
    is_common,
    ranked,
)

__all__ = [
    "ENTRY_TABLE",
    "FTS_TABLE",
    "KEY_WEIGHT",
    "MIN_INDEXED_LENGTH",
    "RANK_ALL_LIMIT",
    "VALUE_WEIGHT",
    "fts_phrase",
    "is_common",
    "ranked",
]
