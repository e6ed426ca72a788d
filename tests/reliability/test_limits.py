"""Limits: body size (413), the per-token rate limit (429 with Retry-After) and the page size cap."""

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import services

MOMENT = re.compile(r"'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d)?'")

URL = "/api/v1/users/alice/memories/notes"


def test_a_body_over_the_cap_is_refused_with_413_naming_the_limit_and_nothing_is_stored(owner_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    body = json.dumps({"value": "x" * 5000})
    response = owner_api.put(URL, body, content_type="application/json")
    assert response.status_code == 413
    assert "limit is 4096 bytes" in response.json()["detail"]
    assert "MEMORYHUB_MAX_BODY_BYTES" in response.json()["detail"]
    assert owner_api.get(URL).status_code == 404


def test_the_default_cap_stops_a_huge_body_before_it_is_parsed(owner_api, settings):
    body = '{"value": "' + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1) + '"}'
    assert owner_api.put(URL, body, content_type="application/json").status_code == 413


def test_a_body_under_the_cap_with_a_too_long_value_is_a_400_naming_the_field(owner_api, settings):
    body = {"value": "x" * (settings.MEMORYHUB_MAX_VALUE_BYTES + 1)}
    response = owner_api.put(URL, body, format="json")
    assert response.status_code == 400
    assert f"at most {settings.MEMORYHUB_MAX_VALUE_BYTES} bytes" in response.json()["value"][0]


def test_a_malformed_content_length_is_a_400(owner_api):
    response = owner_api.generic("PUT", URL, b'{"value": "x"}', content_type="application/json", CONTENT_LENGTH="12abc")
    assert response.status_code == 400


def test_a_token_over_its_rate_gets_429_with_retry_after(owner_api, settings):
    settings.MEMORYHUB_RATE_LIMIT = "3/minute"
    statuses = [owner_api.get("/api/v1/info").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = owner_api.get("/api/v1/info")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60


def test_the_rate_limit_counts_each_token_on_its_own(owner_api, stranger_api, settings):
    settings.MEMORYHUB_RATE_LIMIT = "2/minute"
    for _ in range(2):
        owner_api.get("/api/v1/info")
    assert owner_api.get("/api/v1/info").status_code == 429
    assert stranger_api.get("/api/v1/info").status_code == 200


def test_an_empty_rate_limit_turns_it_off(owner_api, settings):
    settings.MEMORYHUB_RATE_LIMIT = ""
    assert {owner_api.get("/api/v1/info").status_code for _ in range(30)} == {200}


def test_counting_a_request_costs_no_database_query(owner, owner_api, settings):
    services.entry_put(owner=owner, uid="alice", key="notes", value="v")
    owner_api.get(URL)  # the first request of the connection
    settings.MEMORYHUB_RATE_LIMIT = ""
    with CaptureQueriesContext(connection) as uncounted:
        assert owner_api.get(URL).status_code == 200
    settings.MEMORYHUB_RATE_LIMIT = "1000/minute"
    with CaptureQueriesContext(connection) as counted:
        assert owner_api.get(URL).status_code == 200

    # The same statements, but for the moment each read takes as "now" for expiry.
    assert _without_moments(counted) == _without_moments(uncounted)


def _without_moments(queries: CaptureQueriesContext) -> list[str]:
    return [MOMENT.sub("<now>", query["sql"]) for query in queries]


@pytest.mark.slow
def test_a_page_size_above_the_cap_gives_the_cap(owner, owner_api, settings):
    cap = settings.MEMORYHUB_MAX_PAGE_SIZE
    for number in range(cap + 1):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value="v")
    body = owner_api.get(f"/api/v1/users/alice/memories?page_size={cap * 10}").json()
    assert (body["count"], len(body["results"])) == (cap + 1, cap)
    assert body["next"] is not None


@pytest.mark.parametrize("page_size", ["0", "-1", "abc", "1e9"])
def test_a_nonsense_page_size_is_a_400_naming_it(owner, owner_api, page_size):
    services.entry_put(owner=owner, uid="alice", key="k", value="v")
    response = owner_api.get(f"/api/v1/users/alice/memories?page_size={page_size}")
    assert response.status_code == 400
    assert "page_size" in response.json()


def test_a_page_size_past_any_integer_is_held_to_the_cap(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="k", value="v")
    response = owner_api.get("/api/v1/users/alice/memories?page_size=999999999999999999999")
    assert response.status_code == 200
    assert response.json()["count"] == 1
