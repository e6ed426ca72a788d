"""A real hub for the client's tests: the checkout's manage.py, migrated into a fresh database, served
by gunicorn on a free port. Never a mock.

The database is an SQLite file in a temporary folder, or, when DATABASE_URL names PostgreSQL, a fresh
database on that server (dropped afterwards). The listening socket is opened here and handed to
gunicorn (bind fd://N), so the port is known at once and requests queue until a worker is up.
MEMORYHUB_HUB_DIR names another checkout of the hub to test against.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HUB_DIR = Path(os.environ.get("MEMORYHUB_HUB_DIR") or Path(__file__).resolve().parents[3])
GUNICORN = Path(sys.executable).with_name("gunicorn")
HUB_SECRET_KEY = "client-tests-only-not-secret"
# The throttled server's limit: a burst of requests meets 429 at once, and Retry-After is about a second.
THROTTLED_RATE = "5/second"


@dataclass(frozen=True)
class Hub:
    url: str
    token: str
    stranger_token: str
    # An account of its own for the README's examples, whose users are fixed names.
    readme_token: str
    environment: dict[str, str]


def hub_environment(data_dir: Path) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("HONCHO_", "MEMORYHUB_"))}
    environment.update(
        {
            "SECRET_KEY": HUB_SECRET_KEY,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "MEMORYHUB_BACKEND": "local",
            "MEMORYHUB_RATE_LIMIT": "",
            "MEMORYHUB_DATA_DIR": str(data_dir),
            "MEMORYHUB_CACHE_DIR": str(data_dir / "cache"),
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        }
    )
    return environment


@contextmanager
def temporary_database(environment: dict[str, str]) -> Iterator[dict[str, str]]:
    base_url = environment.get("DATABASE_URL", "")
    if not base_url.startswith(("postgres://", "postgresql://")):
        environment["DATABASE_URL"] = ""
        yield environment
        return
    import psycopg

    name = f"memoryhub_client_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    environment["DATABASE_URL"] = base_url.rsplit("/", 1)[0] + "/" + name
    try:
        yield environment
    finally:
        with psycopg.connect(base_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# Run once in the hub's own Python: migrate, make the accounts (printing their tokens) and store one
# evaluation run, in one process rather than a Django start-up for each.
SETUP_SCRIPT = """
import io, json, django
django.setup()
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
tokens = {}
for name in ("agent", "stranger", "readme"):
    out = io.StringIO()
    call_command("create_account", name, stdout=out)
    tokens[name] = out.getvalue().strip()
call_command("evaluate", backend=["null"], ops=1, stdout=io.StringIO())
print(json.dumps(tokens))
"""


@contextmanager
def serve(environment: dict[str, str], log_path: Path, *, workers: int = 1) -> Iterator[str]:
    """gunicorn serving the hub on a free loopback port; yields its base URL and stops it afterwards."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [
                str(GUNICORN),
                "memoryhub.wsgi:application",
                "--bind",
                f"fd://{listener.fileno()}",
                "--workers",
                str(workers),
                "--preload",
                "--timeout",
                "60",
                "--no-control-socket",
            ],
            cwd=HUB_DIR,
            env=environment,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            pass_fds=(listener.fileno(),),
            start_new_session=True,
        )
    listener.close()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        # SIGQUIT: gunicorn's quick shutdown (these servers hold nothing a graceful stop would save). Its
        # workers leave at once but the master lingers for seconds, so it and anything left are killed.
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
