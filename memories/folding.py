"""The one folding of text that search matches on: case and accents, the same on every database.

SQLite 3.40's trigram tokenizer folds ASCII case only and cannot strip accents, and PostgreSQL's
`unaccent` is an extension an ordinary database owner may not be able to create. So the hub folds in
Python, once per write, into columns beside the key and the value (MemoryEntry.key_folded and
value_folded), and every index and every query of the search reads those columns: "Café", "CAFE"
and "café" are one word on SQLite and on PostgreSQL alike.
"""

import unicodedata

# Letters that carry their accent in themselves (Unicode gives them no decomposition, so dropping the combining
# marks leaves them as they are), as their base letters: "Łódź" is found by "Lodz", "Søren" by "Soren". Lower
# case only: fold casefolds before ("Ł" is "ł" by then; "ß" is already "ss").
BASE_LETTERS = {
    "ł": "l",
    "ø": "o",
    "æ": "ae",
    "œ": "oe",
    "đ": "d",
    "ð": "d",
    "þ": "th",
    "\u0131": "i",  # dotless i
    "ħ": "h",
    "ŧ": "t",
}
_BASE_LETTERS = str.maketrans(BASE_LETTERS)


def fold(text: str) -> str:
    """text without case or accents: casefold, decompose (NFKD), drop the combining marks, casefold again, write
    the letters that hold their accent as their base letters (BASE_LETTERS).

    The second casefold catches capitals that a compatibility decomposition brings out (the "MHz"
    of the "㎒" sign).
    """
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char)).casefold().translate(_BASE_LETTERS)
