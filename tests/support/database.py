"""The SQLite test database, migrated once and copied for later runs while the migrations stay the same.

Migrating an empty database takes each test process a few seconds (every xdist worker of
`make test-fast` makes its own). The first process to migrate keeps a copy of the fresh, migrated
database under the system's temporary folder, named by a digest of everything the migrations are
made of: every installed app's migration files, the project modules they import, and the versions of
Django, the REST framework and SQLite. A later process whose digest names a kept copy starts from
that copy instead of migrating; a change to any migration gives a new digest, and the next run
migrates again and keeps that. `pytest --create-db` (as `make test` runs) always migrates, and
refreshes the copy. PostgreSQL test databases are made as pytest-django makes them.
"""

import ast
import hashlib
import importlib.util
import os
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import django
import rest_framework
from django.apps import apps
from django.conf import settings

TEMPLATE_FOLDER = Path(tempfile.gettempdir()) / "memoryhub-test-databases"


def _first_party_imports(migration: Path, project: Path) -> set[Path]:
    """The project's own modules a migration file imports (memories.folding, memories.models, ...)."""
    found: set[Path] = set()
    for node in ast.walk(ast.parse(migration.read_bytes(), filename=str(migration))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin and Path(spec.origin).is_relative_to(project):
                found.add(Path(spec.origin))
    return found


def migrations_digest() -> str:
    """A digest of what the migrated schema is made of: it changes whenever a migration could."""
    project = Path(settings.BASE_DIR).resolve()
    digest = hashlib.sha256()
    for version in (django.__version__, rest_framework.__version__, sqlite3.sqlite_version):
        digest.update(version.encode() + b"\0")
    sources: set[Path] = set()
    for app in apps.get_app_configs():
        folder = Path(app.path) / "migrations"
        for migration in folder.glob("*.py"):
            sources.add(migration.resolve())
            sources |= _first_party_imports(migration, project)
    for source in sorted(sources):
        digest.update(str(source).encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def template_path() -> Path:
    return TEMPLATE_FOLDER / f"migrated-{migrations_digest()}.sqlite3"


def _copy(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (its write-ahead log included), through SQLite's backup."""
    with closing(sqlite3.connect(source)) as reading, closing(sqlite3.connect(target)) as writing:
        reading.backup(writing)


def template_restore(target: Path) -> bool:
    """Put a copy of the kept migrated database at target; False when none is kept for these migrations."""
    template = template_path()
    if not template.is_file():
        return False
    target.unlink(missing_ok=True)
    _copy(template, target)
    return True


def template_keep(migrated: Path) -> None:
    """Keep a copy of a freshly migrated database for the runs that come after (written whole, then renamed)."""
    template = template_path()
    TEMPLATE_FOLDER.mkdir(parents=True, exist_ok=True)
    partial = template.with_name(f"{template.name}.{os.getpid()}.partial")
    try:
        _copy(migrated, partial)
        os.replace(partial, template)
    finally:
        partial.unlink(missing_ok=True)
