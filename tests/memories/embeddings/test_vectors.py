"""The kept vectors of a user answer a search only while the database holds them still: a write made on
another connection (another thread or process) or on the searching one is seen by the next search."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.utils import timezone

from memories import services
from memories.embeddings import get_provider
from memories.embeddings.store import embeddings_process_pending
from memories.models import EntryEmbedding, MemoryEntry
from memories.search import vectors


@pytest.fixture(autouse=True)
def _local_embeddings(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"
    vectors.vectors_cache_clear()


# Near both the tea (0.36) and the dog (0.33) in meaning, above vectors.MIN_SIMILARITY.
QUESTION = "her pet and her morning drink"


def _nearest_keys(owner: User, question: str = QUESTION) -> list[str]:
    provider = get_provider()
    assert provider is not None
    ranked = vectors.semantic_ranked(
        owner=owner, uid="alice", model=provider.name, query_vector=provider.embed([question])[0], limit=3
    )
    keys = dict(MemoryEntry.objects.filter(id__in=[entry_id for entry_id, _ in ranked]).values_list("id", "key"))
    return [keys.get(entry_id, f"#{entry_id} (gone)") for entry_id, _ in ranked]


def _on_another_connection(work: Callable[[], object]) -> None:
    """Run work on a thread of its own, so on a database connection of its own, closed afterwards."""

    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(run).result()


@pytest.mark.django_db(transaction=True)
def test_a_vector_written_or_removed_on_another_connection_is_seen_by_the_next_search(owner: User) -> None:
    services.entry_put(owner=owner, uid="alice", key="tea", value="drinks green tea every morning")
    embeddings_process_pending()
    assert _nearest_keys(owner) == ["tea"]  # the user's vectors now kept

    def add_the_dog() -> None:
        services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever called Miso")
        embeddings_process_pending()

    _on_another_connection(add_the_dog)
    assert sorted(_nearest_keys(owner)) == ["pet", "tea"]

    _on_another_connection(lambda: services.entry_delete(owner=owner, uid="alice", key="pet"))
    assert _nearest_keys(owner) == ["tea"]


@pytest.mark.django_db(transaction=True)
def test_a_vector_changed_by_a_plain_statement_of_another_connection_is_seen_by_the_next_search(owner: User) -> None:
    services.entry_put(owner=owner, uid="alice", key="tea", value="drinks green tea every morning")
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever called Miso")
    embeddings_process_pending()
    assert sorted(_nearest_keys(owner)) == ["pet", "tea"]
    tea, pet = (EntryEmbedding.objects.get(entry__key=key) for key in ("tea", "pet"))
    assert pet.vector is not None

    # A connection of its own (as another process has) gives the tea entry the dog's vector and a later
    # embedding time, in one UPDATE, as a worker elsewhere would store it.
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with other.cursor() as cursor:
            cursor.execute(
                f"UPDATE {EntryEmbedding._meta.db_table} SET vector = %s, embedded_at = %s WHERE entry_id = %s",
                [
                    bytes(pet.vector),
                    other.ops.adapt_datetimefield_value(timezone.now() + timedelta(minutes=1)),
                    tea.entry_id,
                ],
            )
    finally:
        other.close()
    similarities = dict(
        vectors.semantic_ranked(
            owner=owner,
            uid="alice",
            model=tea.model,
            query_vector=np.frombuffer(bytes(pet.vector), dtype="<f4"),
            limit=2,
        )
    )
    assert similarities[tea.entry_id] == pytest.approx(1.0, abs=1e-5)


def test_a_write_on_the_searching_connection_is_seen_by_its_next_search(owner: User) -> None:
    services.entry_put(owner=owner, uid="alice", key="tea", value="drinks green tea every morning")
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever called Miso")
    embeddings_process_pending()
    assert sorted(_nearest_keys(owner)) == ["pet", "tea"]
    services.entry_delete(owner=owner, uid="alice", key="pet")
    assert _nearest_keys(owner) == ["tea"]


def test_the_nearest_carry_the_plain_cosine_of_their_own_vectors_and_the_query_s(owner: User) -> None:
    for key, value in {
        "tea": "drinks green tea every morning",
        "pet": "has a golden retriever called Miso",
        "editor": "uses vim with a handful of plugins",
    }.items():
        services.entry_put(owner=owner, uid="alice", key=key, value=value)
    embeddings_process_pending()
    provider = get_provider()
    assert provider is not None
    (query_vector,) = provider.embed([QUESTION])
    nearest = vectors.semantic_nearest_vectors(
        owner=owner, uid="alice", model=provider.name, query_vector=query_vector, limit=3
    )
    assert nearest.entries and set(nearest.plain) == {entry_id for entry_id, _ in nearest.entries}
    for row in EntryEmbedding.objects.filter(entry_id__in=nearest.plain):
        assert row.vector is not None
        own = np.frombuffer(bytes(row.vector), dtype="<f4")
        cosine = float(own @ query_vector / (np.linalg.norm(own) * np.linalg.norm(query_vector)))
        assert nearest.plain[row.entry_id] == pytest.approx(cosine, abs=1e-5)
