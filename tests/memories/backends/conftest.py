"""Backends under test: local on the test database, honcho on the Honcho double through the real SDK."""

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User

from honcho_double import HonchoDouble
from memories.backends.base import MemoryBackend
from memories.backends.local import LocalBackend
from tests.support.honcho import honcho_backend_for


@pytest.fixture
def honcho_double() -> HonchoDouble:
    return HonchoDouble(api_key="test-key")


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
