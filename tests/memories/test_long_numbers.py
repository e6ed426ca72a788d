"""A number of thousands of digits, where the hub reads a whole number (a page, a version, a held write's number, a
budget, a length), is answered as any number past every limit or as text that is no such number (404, 400, 412 or
413), never with a 500 (past 4,300 digits Python's int() raises)."""

import pytest

from memories import services
from tests.memories.mcp_hub import mcp_asgi_post

HUGE = "9" * 5000
# A small number written with thousands of leading zeros: int() refuses it as it refuses HUGE.
PADDED = "0" * 5000 + "2"
ENTRY = "/api/v1/users/alice/memories/drink"


@pytest.fixture
def stored(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="drink", value="tea")
    return owner_api


@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/users/alice/memories/?page={HUGE}",
        f"/api/v1/users/alice/memories/?q=tea&page={HUGE}",
        f"/api/v1/users/?page={HUGE}",
        f"/api/v1/held/?page={HUGE}",
        f"{ENTRY}/history?page={HUGE}",
    ],
)
def test_a_page_of_thousands_of_digits_is_past_the_last(stored, path):
    response = stored.get(path)
    assert response.status_code == 404, response.content[:200]
    assert response.json()


def test_a_page_size_of_thousands_of_digits_is_held_to_the_cap(stored):
    response = stored.get(f"/api/v1/users/alice/memories/?page_size={HUGE}")
    assert (response.status_code, response.json()["count"]) == (200, 1)


def test_a_budget_of_thousands_of_digits_is_a_400_naming_it(stored):
    response = stored.get(f"/api/v1/users/alice/context?budget={HUGE}")
    assert response.status_code == 400
    assert "budget" in response.json()


def test_a_huge_held_write_number_is_one_never_used(stored):
    assert stored.get(f"/api/v1/held/{HUGE}").status_code == 404


@pytest.mark.parametrize("header", [f'"{HUGE}"', f'"2", "{HUGE}"'])
def test_a_huge_version_in_if_match_matches_nothing(stored, header):
    for response in (
        stored.put(ENTRY, {"value": "coffee"}, format="json", HTTP_IF_MATCH=header),
        stored.delete(ENTRY, HTTP_IF_MATCH=header),
    ):
        assert response.status_code == 412, response.content[:200]
    assert stored.get(ENTRY).json()["value"] == "tea"


def test_a_huge_version_in_if_none_match_is_never_the_entrys(stored):
    response = stored.put(ENTRY, {"value": "coffee"}, format="json", HTTP_IF_NONE_MATCH=f'"{HUGE}"')
    assert response.status_code == 200
    assert response.json()["version"] == 2


def test_a_huge_declared_length_is_over_the_limit(stored):
    response = stored.generic("PUT", ENTRY, b'{"value": "coffee"}', "application/json", CONTENT_LENGTH=HUGE)
    assert response.status_code == 413


@pytest.mark.parametrize("held_id", [HUGE, "\N{SUPERSCRIPT TWO}"])
def test_the_dashboard_refuses_a_held_write_number_that_is_no_number(staff_client, held_id):
    response = staff_client.post(f"/held/decide/?id={held_id}", {"decision": "approve"})
    assert response.status_code == 400


def test_the_dashboard_refuses_a_delete_of_a_huge_version(owner, owner_client):
    services.entry_put(owner=owner, uid="alice", key="drink", value="tea")
    response = owner_client.post("/memory/delete/?uid=alice&key=drink", {"version": HUGE})
    assert response.status_code == 400


def test_mcp_takes_a_length_of_thousands_of_digits_for_one_over_the_limit(settings):
    settings.ALLOWED_HOSTS = ["testserver"]

    sent = mcp_asgi_post([(b"host", b"testserver"), (b"content-length", HUGE.encode())])

    assert sent[0]["status"] == 413
    assert b"MEMORYHUB_MAX_BODY_BYTES" in sent[1]["body"]


def test_a_number_padded_with_thousands_of_zeros_is_read_as_the_number_it_spells(stored, owner_client):
    assert stored.get(f"/api/v1/users/alice/memories/?page_size={PADDED}").json()["count"] == 1
    assert stored.get(f"/api/v1/users/alice/memories/?page={PADDED}").status_code == 404  # page 2 of 1
    assert stored.get(f"/api/v1/held/{PADDED}").status_code == 404
    context = stored.get(f"/api/v1/users/alice/context?budget={PADDED}")
    assert (context.status_code, context.json()["budget"]) == (200, 2)
    assert stored.put(ENTRY, {"value": "coffee"}, format="json", HTTP_IF_MATCH=f'"{PADDED}"').status_code == 412
    deleted = owner_client.post("/memory/delete/?uid=alice&key=drink", {"version": "0" * 5000 + "1"})
    assert deleted.status_code == 302
    assert stored.get(ENTRY).status_code == 404
