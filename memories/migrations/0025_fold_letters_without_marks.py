"""The folded key and value of the entries holding a letter that carries its accent in itself (memories.folding
.BASE_LETTERS: "ł", "ø", "æ", ...), folded again: until now they stayed as they were, so "Lodz" did not find
"Łódź". Only the entries holding one of them are read (their text searched in SQL), and written back in
batches; the search indexes follow the folded columns (SQLite's triggers, PostgreSQL's generated column)."""

import sys
import unicodedata

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from memories.folding import BASE_LETTERS, fold

TABLE = "memories_memoryentry"
BATCH = 1000


def _letters() -> list[str]:
    """Every character whose fold holds a letter BASE_LETTERS names: the letters in both cases, and the ones that
    decompose to them ("Ǿ" is "ø" and an accent; "ℏ" is "ħ"); ASCII is left out (dotless i is "I" in upper case,
    which folds as it did). About a second, over every code point."""
    found = []
    for point in range(0x80, sys.maxunicode + 1):
        char = chr(point)
        if 0xD800 <= point <= 0xDFFF:
            continue
        decomposed = unicodedata.normalize("NFKD", char.casefold()).casefold()
        if any(letter in decomposed for letter in BASE_LETTERS):
            found.append(char)
    return found


def fold_again(apps: StateApps | None, schema_editor: BaseDatabaseSchemaEditor) -> None:
    connection = schema_editor.connection
    quote = schema_editor.quote_name
    letters = _letters()
    holds = " OR ".join(f"{quote(column)} LIKE %s" for column in ("key", "value") for _ in letters)
    patterns = [f"%{letter}%" for _ in ("key", "value") for letter in letters]
    last_id = 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                f"SELECT {quote('id')}, {quote('key')}, {quote('value')} FROM {quote(TABLE)} "
                f"WHERE {quote('id')} > %s AND ({holds}) ORDER BY {quote('id')} LIMIT %s",
                [last_id, *patterns, BATCH],
            )
            rows = cursor.fetchall()
            if not rows:
                return
            cursor.executemany(
                f"UPDATE {quote(TABLE)} SET {quote('key_folded')} = %s, {quote('value_folded')} = %s "
                f"WHERE {quote('id')} = %s",
                [(fold(key), fold(value), entry_id) for entry_id, key, value in rows],
            )
            last_id = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [("memories", "0024_event_version_once")]

    operations = [migrations.RunPython(fold_again, migrations.RunPython.noop, elidable=True)]
