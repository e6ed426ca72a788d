"""Search over one user's entries: the lexical ranking (lexical.py); vectors and their fusion join it here."""

from memories.search.lexical import (
    COUNT_LIMIT,
    MIN_INDEXED_LENGTH,
    RANK_CAP,
    STOP_WORDS,
    Candidate,
    LexicalMatches,
    LexicalQuery,
    Order,
    lexical_candidates,
    matches,
    query_parse,
)

__all__ = [
    "COUNT_LIMIT",
    "MIN_INDEXED_LENGTH",
    "RANK_CAP",
    "STOP_WORDS",
    "Candidate",
    "LexicalMatches",
    "LexicalQuery",
    "Order",
    "lexical_candidates",
    "matches",
    "query_parse",
]
