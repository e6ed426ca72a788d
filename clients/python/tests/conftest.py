"""Fixtures: the live hub of live_hub.py, shared by the session, and a client of it per test."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# The client next to these tests, whatever copy of it the environment has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from live_hub import (
    HUB_DIR,
    SETUP_SCRIPT,
    THROTTLED_RATE,
    Hub,
    HubDatabase,
    hub_database,
    hub_environment,
    running_hub,
)
from memoryhub_client import MemoryHub


@pytest.fixture(scope="session")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubDatabase]:
    """The hub's database, empty: the hub fixture migrates it."""
    with hub_database(tmp_path_factory.mktemp("hub"), migrate=False) as created:
        yield created


@pytest.fixture(scope="session")
def hub(database: HubDatabase, throttled_hub_url: str) -> Iterator[Hub]:
    """The hub every test talks to (no rate limit), with its accounts and one stored evaluation run.

    The servers start before the database is migrated: they need it only when the first request
    comes, and their start-up overlaps the migration.
    """
    environment = hub_environment(database)
    with running_hub(database, database.data_dir / "gunicorn.log", workers=2, project=HUB_DIR) as running:
        completed = subprocess.run(
            [sys.executable, "-c", SETUP_SCRIPT],
            check=False,
            cwd=HUB_DIR,
            env=environment,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"setting up the hub failed:\n{completed.stderr}")
        tokens = json.loads(completed.stdout.strip().splitlines()[-1])
        yield Hub(
            url=running.url,
            token=tokens["agent"],
            stranger_token=tokens["stranger"],
            readme_token=tokens["readme"],
            guarded_token=tokens["guarded"],
            environment=environment,
        )


@pytest.fixture(scope="session")
def throttled_hub_url(database: HubDatabase) -> Iterator[str]:
    """A second server on the same database whose rate limit is THROTTLED_RATE per token."""
    limit = {"MEMORYHUB_RATE_LIMIT": THROTTLED_RATE}
    with running_hub(database, database.data_dir / "throttled.log", workers=1, env=limit, project=HUB_DIR) as running:
        yield running.url


@pytest.fixture
def uid(request: pytest.FixtureRequest) -> str:
    """A uid of this test's own, so tests sharing the hub never see each other's memories."""
    return f"{request.node.name[:40]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def client(hub: Hub) -> Iterator[MemoryHub]:
    with MemoryHub(hub.url, hub.token) as connected:
        yield connected


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here talks to a hub started in a process of its own: `make test-fast` leaves them out."""
    here = Path(__file__).resolve().parent
    for item in items:
        if Path(item.path).is_relative_to(here):
            item.add_marker(pytest.mark.process)
