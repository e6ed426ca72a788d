"""Sync tests: the outbox on the test database, the worker on the Honcho double through the real SDK,
a clock the tests move by hand (so backoffs pass without waiting), and sync switched on."""

from collections.abc import Iterator
from datetime import datetime, timedelta
from random import Random
from typing import Any

import pytest
from django.utils import timezone

from honcho_double import HonchoDouble
from memories.backends.honcho import HonchoStore
from memories.sync.worker import Backoff, SyncWorker
from tests.support.honcho import TEST_WORKSPACE, double_config


class ManualClock:
    """Now, as the worker sees it: the real time, moved ahead by hand so backoffs pass without waiting."""

    def __init__(self) -> None:
        self.ahead = timedelta()

    def __call__(self) -> datetime:
        return timezone.now() + self.ahead

    def advance(self, **delta: float) -> None:
        self.ahead += timedelta(**delta)


@pytest.fixture
def sync_on(settings) -> None:
    settings.MEMORYHUB_HONCHO_SYNC = True


@pytest.fixture
def honcho_double() -> HonchoDouble:
    return HonchoDouble(api_key="test-key")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_worker(honcho_double: HonchoDouble, clock: ManualClock) -> Iterator:
    """Workers on the double, each with its own store (as each thread or process would have)."""
    stores: list[HonchoStore] = []

    def make(**options: Any) -> SyncWorker:
        store = HonchoStore(double_config(), http_client=honcho_double.http_client())
        stores.append(store)
        options.setdefault("clock", clock)
        options.setdefault("backoff", Backoff(random=Random(5)))
        return SyncWorker(store, **options)

    yield make
    for store in stores:
        store.close()


@pytest.fixture
def worker(make_worker) -> SyncWorker:
    return make_worker()


@pytest.fixture
def served_double(settings) -> Iterator[HonchoDouble]:
    """A Honcho double on 127.0.0.1, with the hub's settings pointing at it.

    For the command, which makes its own store.
    """
    double = HonchoDouble(api_key="test-key")
    with double.running() as base_url:
        settings.HONCHO_URL, settings.HONCHO_API_KEY, settings.HONCHO_WORKSPACE_ID, settings.HONCHO_TIMEOUT = (
            base_url,
            "test-key",
            TEST_WORKSPACE,
            2.0,
        )
        yield double
