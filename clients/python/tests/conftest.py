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

from live_hub import HUB_DIR, SETUP_SCRIPT, THROTTLED_RATE, Hub, hub_environment, serve, temporary_database
from memoryhub_client import MemoryHub


@pytest.fixture(scope="session")
def hub_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    data_dir = tmp_path_factory.mktemp("hub")
    with temporary_database(hub_environment(data_dir)) as environment:
        yield environment


@pytest.fixture(scope="session")
def hub(hub_database: dict[str, str], throttled_hub_url: str) -> Iterator[Hub]:
    """The hub every test talks to (no rate limit), with two accounts and one stored evaluation run.

    The servers start before the database is migrated: they need it only when the first request
    comes, and their start-up overlaps the migration.
    """
    data_dir = Path(hub_database["MEMORYHUB_DATA_DIR"])
    with serve(hub_database, data_dir / "gunicorn.log", workers=2) as url:
        completed = subprocess.run(
            [sys.executable, "-c", SETUP_SCRIPT],
            check=False,
            cwd=HUB_DIR,
            env=hub_database,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"setting up the hub failed:\n{completed.stderr}")
        tokens = json.loads(completed.stdout.strip().splitlines()[-1])
        yield Hub(
            url=url,
            token=tokens["agent"],
            stranger_token=tokens["stranger"],
            readme_token=tokens["readme"],
            environment=hub_database,
        )


@pytest.fixture(scope="session")
def throttled_hub_url(hub_database: dict[str, str]) -> Iterator[str]:
    """A second server on the same database whose rate limit is THROTTLED_RATE per token."""
    data_dir = Path(hub_database["MEMORYHUB_DATA_DIR"])
    environment = {
        **hub_database,
        "MEMORYHUB_RATE_LIMIT": THROTTLED_RATE,
        "MEMORYHUB_CACHE_DIR": str(data_dir / "throttled-cache"),
    }
    with serve(environment, data_dir / "throttled.log") as url:
        yield url


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
