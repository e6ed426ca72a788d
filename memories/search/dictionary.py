"""The words of the language a query word is taken to be spelt right in: the whole words of the shipped
embedding model's tokenizer (memories/embeddings/model/tokenizer.json, all-MiniLM-L6-v2's WordPiece vocabulary),
folded as the search folds a query (memories.folding). Whatever the embeddings setting, the file is
part of the hub.

A query word found there is a word as it is written ("tennis", "play", "like"), not a misspelling: the search
seeks no typo's variants for it, so "does she play tennis" does not match "plan" or "pay", and "like" matches
what holds it ("likes", as a substring), not "bike". A word the vocabulary does not hold whole ("wich", "edtor",
"pyhton", or a name such as "neovim") may be misspelt, and its variants among the user's words are sought.
"""

import functools
import json
import logging

from memories.embeddings.local import MODEL_DIR, TOKENIZER_FILE
from memories.folding import fold

logger = logging.getLogger(__name__)


@functools.cache
def known_words() -> frozenset[str]:
    """The tokenizer's whole words of letters (its word pieces, "##ing", and its marks, "[CLS]", left out); none
    when the file cannot be read, so every word may then be misspelt, as before there was a dictionary."""
    path = MODEL_DIR / TOKENIZER_FILE
    try:
        vocabulary = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
        # Folded as a query's words are ("wrocław" is "wroclaw", "ß" is "ss").
        return frozenset(fold(token) for token in vocabulary if token.isalpha())
    except (OSError, ValueError, KeyError, TypeError) as error:
        logger.warning("The words of %s cannot be read (%s): every query word may be taken for a typo.", path, error)
        return frozenset()
