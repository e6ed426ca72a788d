"""A real hub in processes of its own, for every test that needs one (the reliability and MCP tests,
the Python client's tests): `make serve`'s server (gunicorn with uvicorn workers, from
memoryhub/gunicorn.conf.py) with one or more worker processes on 127.0.0.1.

The test opens the listening socket itself and hands it to gunicorn (bind fd://N), so the port is
known and connections queue in the backlog until a worker takes them: no waiting for start-up.
Each hub gets a database of its own: an SQLite file in a temporary folder, or, when DATABASE_URL
names PostgreSQL, a fresh database on that server, dropped afterwards; and a data folder of its own
(the temporary folder) either way. hub_environment() is the environment of every process of such a
hub: this one's, less its MEMORYHUB_ and HONCHO_ settings, so what a developer has exported never
changes what a test sees.
"""

import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import dj_database_url

PROJECT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
SECRET_KEY = "test-hub-only-not-secret"


@dataclass
class HubDatabase:
    """Where a hub keeps its data, and how a test reads it afterwards."""

    env: dict[str, str]
    sqlite_path: Path | None = None
    postgres_url: str | None = None

    @property
    def data_dir(self) -> Path:
        return Path(self.env["MEMORYHUB_DATA_DIR"])

    @property
    def url(self) -> str:
        """The database as a DATABASE_URL, for a process whose data folder is elsewhere."""
        return self.postgres_url or f"sqlite:///{self.sqlite_path}"

    def rows(self, sql: str) -> list[tuple]:
        if self.sqlite_path is not None:
            with sqlite3.connect(self.sqlite_path) as connection:
                return connection.execute(sql).fetchall()
        import psycopg

        assert self.postgres_url is not None
        with psycopg.connect(self.postgres_url) as connection:
            return connection.execute(sql).fetchall()

    @property
    def engine(self) -> str:
        return "sqlite" if self.sqlite_path is not None else "postgresql"


@contextmanager
def hub_database(tmp_path: Path, *, migrate: bool = True) -> Iterator[HubDatabase]:
    """An empty database for one hub, migrated unless migrate is False: PostgreSQL when DATABASE_URL
    says so, else SQLite; tmp_path is the hub's data folder."""
    base_url = os.environ.get("DATABASE_URL", "")
    if base_url and dj_database_url.parse(base_url)["ENGINE"].endswith("postgresql"):
        import psycopg

        name = f"memoryhub_reliability_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(base_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        url = base_url.rsplit("/", 1)[0] + "/" + name
        database = HubDatabase(env={"DATABASE_URL": url, "MEMORYHUB_DATA_DIR": str(tmp_path)}, postgres_url=url)
        try:
            if migrate:
                _migrate(database)
            yield database
        finally:
            with psycopg.connect(base_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        database = HubDatabase(
            env={"DATABASE_URL": "", "MEMORYHUB_DATA_DIR": str(tmp_path)},
            sqlite_path=tmp_path / "memoryhub.sqlite3",
        )
        if migrate:
            _migrate(database)
        yield database


def hub_environment(database: HubDatabase, **extra: str) -> dict[str, str]:
    """The environment of a hub's processes: this one's without its MEMORYHUB_ and HONCHO_ settings,
    a test key, no rate limit, the local backend, the database and data folder, then extra."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("HONCHO_", "MEMORYHUB_"))}
    environment.update(
        {
            "SECRET_KEY": SECRET_KEY,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "MEMORYHUB_BACKEND": "local",
            "MEMORYHUB_RATE_LIMIT": "",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        }
    )
    environment.update(database.env)
    environment["MEMORYHUB_CACHE_DIR"] = str(database.data_dir / "cache")
    environment.update(extra)
    return environment


def _manage(database: HubDatabase, *arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=PROJECT,
        env=hub_environment(database),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return completed.stdout


def _migrate(database: HubDatabase) -> None:
    _manage(database, "migrate", "--noinput", "-v0")


def run_command(database: HubDatabase, *arguments: str) -> str:
    """`manage.py ARGUMENTS` on the hub's database; what it printed."""
    return _manage(database, *arguments)


def create_token(database: HubDatabase, name: str) -> str:
    return _manage(database, "create_account", name).strip()


@dataclass
class RunningHub:
    port: int
    process: subprocess.Popen
    log_path: Path
    requests_sent: int = field(default=0)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill_hard(self) -> None:
        """kill -9 the master and every worker at once, as a power cut or the OOM killer would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


@contextmanager
def running_hub(
    database: HubDatabase,
    log_path: Path,
    *,
    workers: int = 4,
    env: dict[str, str] | None = None,
    project: Path = PROJECT,
) -> Iterator[RunningHub]:
    """The hub of project (this checkout unless another is named) serving database, its output in
    log_path; env is added to hub_environment(database). Stopped afterwards, killed if it lingers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [
                str(GUNICORN),
                "-c",
                "memoryhub/gunicorn.conf.py",
                "--bind",
                f"fd://{listener.fileno()}",
                "--workers",
                str(workers),
                "--timeout",
                "60",
            ],
            cwd=project,
            env=hub_environment(database, **(env or {})),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            pass_fds=(listener.fileno(),),
            start_new_session=True,
        )
    listener.close()
    hub = RunningHub(port=port, process=process, log_path=log_path)
    try:
        yield hub
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                hub.kill_hard()


def call(
    port: int, method: str, path: str, token: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Message, Any]:
    """One request on a fresh connection; returns (status, headers, decoded JSON body or None)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        sent_headers = {"Authorization": f"Token {token}", "Accept": "application/json", **(headers or {})}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            sent_headers["Content-Type"] = "application/json"
        connection.request(method, path, body=payload, headers=sent_headers)
        response = connection.getresponse()
        raw = response.read()
        decoded = (
            json.loads(raw) if raw and response.getheader("Content-Type", "").startswith("application/json") else None
        )
        # The headers as a message, so names match whatever their case (uvicorn sends them in lower case).
        return response.status, response.headers, decoded
    finally:
        connection.close()


def history_consistency_problems(database: HubDatabase) -> list[str]:
    """Every way the entries and their history could disagree; an empty list when they agree.

    For each (owner, uid, key): the newest event is a create or update exactly when the entry
    exists, at the entry's version and with its value, kind and meta; versions within a life of
    the entry (create up to delete) go up by one with each event.
    """
    entries = {
        (owner, uid, key): (version, value, kind, meta)
        for owner, uid, key, version, value, kind, meta in database.rows(
            "SELECT owner_id, uid, key, version, value, kind, meta FROM memories_memoryentry"
        )
    }
    events: dict[tuple, list[tuple]] = {}
    for owner, uid, key, action, version, value_after, kind_after, meta_after in database.rows(
        "SELECT owner_id, uid, key, action, version, value_after, kind_after, meta_after "
        "FROM memories_memoryevent ORDER BY id"
    ):
        events.setdefault((owner, uid, key), []).append((action, version, value_after, kind_after, meta_after))
    problems = []
    for identity, (version, value, kind, meta) in entries.items():
        history = events.get(identity)
        if not history:
            problems.append(f"{identity}: an entry without history")
            continue
        action, last_version, value_after, kind_after, meta_after = history[-1]
        if action == "delete" or last_version != version or value_after != value or kind_after != kind:
            problems.append(f"{identity}: entry v{version} but newest event is {action} v{last_version}")
        elif _as_json(meta_after) != _as_json(meta):
            problems.append(f"{identity}: entry meta differs from the newest event's")
    for identity, history in events.items():
        if identity not in entries and history[-1][0] != "delete":
            problems.append(f"{identity}: history says it exists, but there is no entry")
        previous = None
        for action, version, *_ in history:
            if action == "update" and (previous is None or version != previous + 1):
                problems.append(f"{identity}: update to v{version} after v{previous}")
            if action == "delete" and version != previous:
                problems.append(f"{identity}: delete at v{version} of an entry at v{previous}")
            previous = version
    return problems


def _as_json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def integrity_problems(database: HubDatabase) -> list[str]:
    """The database engine's own check: PRAGMA integrity_check and foreign keys on SQLite; on
    PostgreSQL, that every constraint still holds (unique identity, positive versions, owners)."""
    if database.engine == "sqlite":
        verdict = database.rows("PRAGMA integrity_check")
        problems = [] if verdict == [("ok",)] else [f"integrity_check: {verdict}"]
        problems += [f"foreign key broken: {row}" for row in database.rows("PRAGMA foreign_key_check")]
        return problems
    checks = {
        "duplicate identity": (
            "SELECT owner_id, uid, key FROM memories_memoryentry GROUP BY 1, 2, 3 HAVING count(*) > 1"
        ),
        "version below 1": "SELECT id FROM memories_memoryentry WHERE version < 1",
        "entry without owner": (
            "SELECT e.id FROM memories_memoryentry e LEFT JOIN auth_user u ON u.id = e.owner_id WHERE u.id IS NULL"
        ),
        "event without owner": (
            "SELECT e.id FROM memories_memoryevent e LEFT JOIN auth_user u ON u.id = e.owner_id WHERE u.id IS NULL"
        ),
        "invalid index": "SELECT indexrelid::regclass::text FROM pg_index WHERE NOT indisvalid",
    }
    return [f"{name}: {rows}" for name, sql in checks.items() if (rows := database.rows(sql))]
