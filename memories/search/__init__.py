"""Search over one user's entries: the lexical ranking (lexical.py), vectors (vectors.py), their fusion (hybrid.py)."""

from memories.search.hybrid import HybridMatches, RankedMatches, SearchAnswer, Semantic, ShownMatches, hybrid_search
from memories.search.lexical import (
    COUNT_LIMIT,
    MIN_INDEXED_LENGTH,
    RANK_CAP,
    STOP_WORDS,
    Candidate,
    LexicalMatches,
    LexicalQuery,
    Order,
    ids_in,
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
    "HybridMatches",
    "LexicalMatches",
    "LexicalQuery",
    "Order",
    "RankedMatches",
    "SearchAnswer",
    "Semantic",
    "ShownMatches",
    "hybrid_search",
    "ids_in",
    "lexical_candidates",
    "matches",
    "query_parse",
]
