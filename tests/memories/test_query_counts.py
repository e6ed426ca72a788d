"""Reads take a fixed number of queries, however many entries there are."""

import pytest
from django.db import connection

from memories import services

# On SQLite a query first probes the full-text index (at most 2,001 rows) to choose between ranking
# every match and walking the newest entries; PostgreSQL ranks with its GIN indexes directly.
SEARCH_PROBE = 1 if connection.vendor == "sqlite" else 0


@pytest.fixture
def many_entries(owner):
    for number in range(30):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value=f"python note {number}")
        services.entry_put(owner=owner, uid=f"user{number}", key="k", value="v")


def test_listing_a_page_takes_three_queries(owner_api, many_entries, django_assert_num_queries):
    # 1. the token and its account, 2. the count, 3. the page
    with django_assert_num_queries(3):
        response = owner_api.get("/api/v1/users/alice/memories/?page_size=20")
    assert len(response.json()["results"]) == 20


def test_querying_takes_three_queries_and_the_index_probe(owner_api, many_entries, django_assert_num_queries):
    # 1. the token and its account, (SQLite: the index probe), 2. the count of matches, 3. the page of matches
    with django_assert_num_queries(3 + SEARCH_PROBE):
        response = owner_api.get("/api/v1/users/alice/memories/?q=PYTHON")
    assert response.json()["count"] == 30


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


def test_the_tool_query_and_list_take_two_queries(owner_api, many_entries, django_assert_num_queries):
    # 1. the token and its account, (SQLite: the index probe), 2. the matches (or the list)
    with django_assert_num_queries(2 + SEARCH_PROBE):
        owner_api.post("/api/v1/tool", {"action": "query", "uid": "alice", "query": "python"}, format="json")
    with django_assert_num_queries(2):
        owner_api.post("/api/v1/tool", {"action": "list", "uid": "alice"}, format="json")
