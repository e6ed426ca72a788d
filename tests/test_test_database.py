"""The SQLite test database a run starts from (a kept copy of a migrated one, tests.support.database) is
the database the migrations make."""

from pathlib import Path
from types import SimpleNamespace

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.support import database
from tests.support.database import _first_party_imports, migrations_digest

ROOT = Path(__file__).resolve().parent.parent


def test_the_test_database_has_every_migration_of_every_app_applied(db):
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    assert {"memories_memoryentry", "evaluation_evaluationrun"} <= set(connection.introspection.table_names())


def test_the_kept_copy_is_named_by_the_migrations_and_the_project_code_they_import():
    folding = next((ROOT / "memories" / "migrations").glob("0007_*.py"))
    assert ROOT / "memories" / "folding.py" in _first_party_imports(folding, ROOT)


def test_any_change_to_a_migration_names_another_copy(tmp_path, monkeypatch):
    (tmp_path / "migrations").mkdir()
    monkeypatch.setattr(database.apps, "get_app_configs", lambda: [SimpleNamespace(path=str(tmp_path))])
    first = tmp_path / "migrations" / "0001_initial.py"
    first.write_text("operations = []\n")
    digests = [migrations_digest()]
    first.write_text("operations = [None]\n")
    digests.append(migrations_digest())
    (tmp_path / "migrations" / "0002_more.py").write_text("operations = []\n")
    digests.append(migrations_digest())
    assert len(set(digests)) == 3
