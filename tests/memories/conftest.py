"""Fixtures for the memories tests: the openai embeddings provider on a stand-in endpoint."""

from collections.abc import Iterator

import pytest

from tests.memories.embeddings.stand_in import StandIn, start_stand_in


@pytest.fixture
def remote_embeddings(settings) -> Iterator[StandIn]:
    """The openai provider, on the stand-in endpoint that records every request."""
    endpoint = start_stand_in()
    settings.MEMORYHUB_EMBEDDINGS = "openai"
    settings.MEMORYHUB_EMBEDDINGS_URL = endpoint.url
    settings.MEMORYHUB_EMBEDDINGS_MODEL = "stand-in-small"
    try:
        yield endpoint
    finally:
        endpoint.stop()
