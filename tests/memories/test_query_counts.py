"""Reads take a fixed number of queries, however many entries there are."""

import pytest
from django.db import connection

from memories import services
from memories.models import EntryEmbedding, MemoryEntry, MemoryEvent
from memories.search import lexical


@pytest.fixture(autouse=True)
def _lexical_search(settings):
    # The lexical path's counts; with embeddings on, tests/memories/embeddings/test_hybrid.py counts the hybrid one.
    settings.MEMORYHUB_EMBEDDINGS = "off"


@pytest.fixture(autouse=True)
def _word_statistics_read(db: None) -> None:
    # PostgreSQL: a process reads the words index's statistics at most once a minute (lexical.WORD_STATISTICS_SECONDS),
    # not per search: read them now, so the counts below are a search's own.
    if connection.vendor == "postgresql":
        lexical.word_statistics_clear()
        lexical._word_statistics_postgres()


@pytest.fixture
def many_entries(owner):
    # One bulk import, as a backup's restore would write them: the reads below are what is counted.
    records = [
        services.ImportRecord(uid="alice", key=f"k{number}", value=f"python note {number}") for number in range(30)
    ]
    records += [services.ImportRecord(uid=f"user{number}", key="k", value="v") for number in range(30)]
    counts = services.entries_import(owner=owner, records=records)
    assert counts.created == 60


def test_listing_a_page_takes_two_queries(owner_api, many_entries, django_assert_num_queries):
    # 1. the token and its account, 2. the page and one row more, with the count (of at most 1,001 rows)
    with django_assert_num_queries(2):
        response = owner_api.get("/api/v1/users/alice/memories/?page_size=20")
    assert len(response.json()["results"]) == 20
    assert response.json()["count"] == 30


def test_a_known_token_lists_a_page_in_one_query(owner_api, many_entries, django_assert_num_queries):
    owner_api.get("/api/v1/users/alice/memories/")
    with django_assert_num_queries(1):
        response = owner_api.get("/api/v1/users/alice/memories/?page=2&page_size=20&kind=preference")
    assert [entry["key"] for entry in response.json()["results"]] == [f"k{number}" for number in range(9, -1, -1)]


def test_a_put_that_creates_an_entry_reads_once_and_writes_twice(owner_api, django_assert_num_queries):
    owner_api.get("/api/v1/users/alice/memories/")
    # 1. savepoint (the test's transaction holds BEGIN), 2. the entry, locked, with its key's last version
    # in the history, 3. its INSERT (ON CONFLICT DO NOTHING: a concurrent create of the key is possible on
    # PostgreSQL), 4. its history event (on PostgreSQL in the INSERT's statement), 5. release
    with django_assert_num_queries(5 if connection.vendor == "sqlite" else 4):
        response = owner_api.put("/api/v1/users/alice/memories/tea", {"value": "green"}, format="json")
    assert response.status_code == 201
    assert response.json()["version"] == 1


def test_with_embeddings_on_a_created_entry_is_marked_for_its_vector_in_the_same_statement_on_postgresql(
    owner, owner_api, settings, django_assert_num_queries
):
    settings.MEMORYHUB_EMBEDDINGS = "local"
    owner_api.get("/api/v1/users/alice/memories/")
    # As above, and the entry's pending vector row: a statement of its own on SQLite, in the INSERT's on PostgreSQL.
    with django_assert_num_queries(6 if connection.vendor == "sqlite" else 4):
        response = owner_api.put("/api/v1/users/alice/memories/tea", {"value": "green"}, format="json")
    assert response.status_code == 201
    entry = MemoryEntry.objects.get(owner=owner, uid="alice", key="tea")
    assert EntryEmbedding.objects.filter(entry=entry, pending=True, wanted_version=1).exists()
    (event,) = MemoryEvent.objects.filter(owner=owner, uid="alice", key="tea")
    assert (event.action, event.version, event.value_after, event.actor_id) == ("create", 1, "green", owner.pk)


def test_querying_takes_four_queries(owner_api, many_entries, django_assert_num_queries):
    # 1. the token and its account, 2. the ranked candidates (with their scores),
    # 3. the count of matches (of at most 1,001; on PostgreSQL in the candidates' statement), 4. the page's
    # entries by id
    with django_assert_num_queries(4 if connection.vendor == "sqlite" else 3):
        response = owner_api.get("/api/v1/users/alice/memories/?q=PYTHON")
    assert response.json()["count"] == 30


def test_a_page_past_the_ranked_candidates_takes_five_queries(
    owner_api, many_entries, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(lexical, "RANK_CAP", 10)
    # 1. the token and its account, 2. the ranked candidates, (SQLite: how many hold the word whole,
    # since the candidates reached the cap), 3. the count of matches (on PostgreSQL in the candidates'
    # statement), 4. the rest, newest first
    with django_assert_num_queries(5 if connection.vendor == "sqlite" else 3):
        response = owner_api.get("/api/v1/users/alice/memories/?q=python&page_size=10&page=2")
    assert response.json()["order"] == "newest"


def test_listing_users_takes_three_queries(owner_api, many_entries, django_assert_num_queries):
    # 1. the token and its account, 2. the count of uids, 3. the page of uids with counts
    with django_assert_num_queries(3):
        response = owner_api.get("/api/v1/users/")
    assert response.json()["count"] == 31


def test_history_takes_three_queries(owner, owner_api, django_assert_num_queries):
    for number in range(10):
        services.entry_put(owner=owner, uid="alice", key="k", value=str(number))
    # 1. the token and its account, 2. the count of events, 3. the events with their actors
    with django_assert_num_queries(3):
        response = owner_api.get("/api/v1/users/alice/memories/k/history")
    assert response.json()["count"] == 10


def test_the_tool_query_and_list_take_one_to_three_queries(owner_api, many_entries, django_assert_num_queries):
    # 1. the token and its account, 2. the ranked candidates, 3. their entries by id
    # (the list: 1. the list; the worker holds the token and its account since the first request)
    with django_assert_num_queries(3):
        owner_api.post("/api/v1/tool", {"action": "query", "uid": "alice", "query": "python"}, format="json")
    with django_assert_num_queries(1):
        owner_api.post("/api/v1/tool", {"action": "list", "uid": "alice"}, format="json")
