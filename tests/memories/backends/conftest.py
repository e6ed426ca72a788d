"""Backends under test: local on the test database, honcho on the Honcho double through the real SDK."""

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User

from honcho_double import HonchoDouble
from honcho_double.server import IN_PROCESS_BASE_URL
from memories.backends.base import MemoryBackend
from memories.backends.honcho import HonchoBackend, HonchoConfig
from memories.backends.local import LocalBackend

TEST_WORKSPACE = "memoryhub-tests"


def double_config(
    base_url: str = IN_PROCESS_BASE_URL, *, api_key: str = "test-key", timeout: float = 2.0
) -> HonchoConfig:
    return HonchoConfig(
        base_url=base_url, api_key=api_key, workspace_id=TEST_WORKSPACE, timeout=timeout, configured=True
    )


@pytest.fixture
def honcho_double() -> HonchoDouble:
    return HonchoDouble(api_key="test-key")


def honcho_backend_for(account: User, double: HonchoDouble) -> HonchoBackend:
    return HonchoBackend(owner=account, config=double_config(), http_client=double.http_client())


@pytest.fixture(params=["local", "honcho"])
def backend_for(request, honcho_double: HonchoDouble, db) -> Iterator:
    """A function making the backend under test for an account: each storing backend in turn."""
    made: list[MemoryBackend] = []

    def make(account: User) -> MemoryBackend:
        backend = (
            LocalBackend(owner=account) if request.param == "local" else honcho_backend_for(account, honcho_double)
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


@pytest.fixture
def backend(backend_for, owner: User) -> MemoryBackend:
    return backend_for(owner)
