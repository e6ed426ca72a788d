"""Configuration mistakes told in one line: what is wrong, which setting, and the fix.

The command line (manage.py) and the server's start-up check (`make run`, `make serve`) turn
these errors into one or two lines instead of a traceback with the useful line at its bottom.
"""

import os
import sqlite3

from django.core.exceptions import ImproperlyConfigured
from django.db.utils import OperationalError


def _database_description() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        return "the SQLite database in MEMORYHUB_DATA_DIR"
    # Name the place, never the password.
    import dj_database_url

    try:
        config = dj_database_url.parse(url)
    except ValueError:
        return "DATABASE_URL"
    host = config.get("HOST") or "local socket"
    return f"DATABASE_URL ({host}:{config.get('PORT') or 'default port'}/{config.get('NAME')})"


def configuration_error(error: BaseException) -> str | None:
    """The one-line message for a configuration mistake, or None when the error is not one."""
    if isinstance(error, ImproperlyConfigured):
        return str(error)
    if isinstance(error, OperationalError | sqlite3.OperationalError):
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "unable to open database file" in first_line or "readonly database" in first_line:
            folder = os.environ.get("MEMORYHUB_DATA_DIR") or "./data"
            return (
                f"the SQLite database cannot be opened or written in MEMORYHUB_DATA_DIR={folder} ({first_line}); "
                "point MEMORYHUB_DATA_DIR at a folder this user can write"
            )
        return f"{_database_description()} cannot be used: {first_line}. Check DATABASE_URL and that the server runs."
    if isinstance(error, PermissionError | FileNotFoundError | NotADirectoryError) and getattr(error, "filename", None):
        folder = os.environ.get("MEMORYHUB_DATA_DIR") or "./data"
        return (
            f"cannot write {error.filename} ({error.strerror}): MEMORYHUB_DATA_DIR={folder} must be a folder this "
            "user can create and write"
        )
    return None
