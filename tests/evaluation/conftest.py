"""Evaluation tests start with Honcho unconfigured, whatever the environment says; each test that wants
Honcho points it at a Honcho double."""

from collections.abc import Iterator

import pytest

from honcho_double import HonchoDouble
from memories.backends import forget_honcho_probe


@pytest.fixture(autouse=True)
def _honcho_unconfigured(settings) -> Iterator[None]:
    settings.HONCHO_URL, settings.HONCHO_API_KEY, settings.HONCHO_TIMEOUT = "", "", 2.0
    forget_honcho_probe()
    yield
    forget_honcho_probe()


@pytest.fixture
def served_double(settings) -> Iterator[HonchoDouble]:
    """A Honcho double on 127.0.0.1, with HONCHO_URL pointing at it."""
    double = HonchoDouble()
    with double.running() as base_url:
        settings.HONCHO_URL = base_url
        yield double
