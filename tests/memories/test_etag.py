"""Optimistic concurrency: GET gives the version as an ETag; If-Match makes a write conditional on it."""

import pytest

URL = "/api/v1/users/alice/memories/editor"


@pytest.fixture
def stored(owner_api):
    owner_api.put(URL, {"value": "vim"}, format="json")
    owner_api.put(URL, {"value": "emacs"}, format="json")
    return owner_api


def test_get_answers_the_version_as_an_etag(stored):
    response = stored.get(URL)
    assert response["ETag"] == '"2"'
    assert response.json()["version"] == 2


def test_a_put_with_the_current_etag_writes_and_answers_the_new_etag(stored):
    response = stored.put(URL, {"value": "helix"}, format="json", HTTP_IF_MATCH='"2"')
    assert response.status_code == 200
    assert response["ETag"] == '"3"'
    assert stored.get(URL).json()["value"] == "helix"


def test_a_put_with_a_stale_etag_is_refused_and_changes_nothing(stored):
    response = stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 412
    assert "version 2" in response.json()["detail"]
    assert stored.get(URL).json()["value"] == "emacs"
    assert stored.get(URL + "/history").json()["count"] == 2


def test_a_patch_with_a_stale_etag_is_refused(stored):
    assert stored.patch(URL, {"kind": "tool"}, format="json", HTTP_IF_MATCH='"1"').status_code == 412
    assert stored.get(URL).json()["kind"] == "preference"


def test_a_patch_with_the_current_etag_applies(stored):
    response = stored.patch(URL, {"kind": "tool"}, format="json", HTTP_IF_MATCH='"2"')
    assert response.status_code == 200
    assert response["ETag"] == '"3"'


def test_a_delete_with_a_stale_etag_keeps_the_entry(stored):
    assert stored.delete(URL, HTTP_IF_MATCH='"1"').status_code == 412
    assert stored.get(URL).status_code == 200
    assert stored.delete(URL, HTTP_IF_MATCH='"2"').status_code == 204
    assert stored.get(URL).status_code == 404


def test_if_match_on_a_missing_entry_is_refused_instead_of_creating_it(owner_api):
    response = owner_api.put("/api/v1/users/alice/memories/new", {"value": "x"}, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 412
    assert owner_api.get("/api/v1/users/alice/memories/new").status_code == 404


def test_if_match_star_needs_the_entry_to_exist(stored):
    assert (
        stored.put("/api/v1/users/alice/memories/new", {"value": "x"}, format="json", HTTP_IF_MATCH="*").status_code
        == 412
    )
    assert stored.put(URL, {"value": "kakoune"}, format="json", HTTP_IF_MATCH="*").status_code == 200


@pytest.mark.parametrize("header", ['W/"2"', "2", '"two"', '""', '"²"'])
def test_a_weak_or_malformed_etag_never_matches(stored, header):
    assert stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_MATCH=header).status_code == 412
    assert stored.get(URL).json()["value"] == "emacs"


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ('W/"2"', 'a weak one (W/"...") never matches'),
        ('W/"2", W/"1"', 'a weak one (W/"...") never matches'),
        ("2", "a value without its quotes never matches"),
        ('"two"', "its version in double quotes, without leading zeros"),
        ('"02"', "its version in double quotes, without leading zeros"),
        (" ", "If-Match is empty"),
    ],
)
def test_an_if_match_that_names_no_version_says_what_is_wrong_and_what_form_matches(stored, header, words):
    response = stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_MATCH=header)

    assert response.status_code == 412
    detail = response.json()["detail"]
    assert words in detail
    assert "ETag header" in detail
    assert '"3"' not in detail


def test_a_list_of_etags_matches_when_it_holds_the_current_version(stored):
    assert stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_MATCH='"1", "2"').status_code == 200
    assert stored.put(URL, {"value": "ed"}, format="json", HTTP_IF_MATCH='"1", "2"').status_code == 412


def test_without_if_match_the_last_write_wins(stored):
    assert stored.put(URL, {"value": "nano"}, format="json").status_code == 200
    assert stored.get(URL).json()["version"] == 3


def test_another_account_with_the_etag_sees_only_a_missing_entry(stored, stranger_api):
    response = stranger_api.delete(URL, HTTP_IF_MATCH='"2"')
    never_there = stranger_api.delete("/api/v1/users/alice/memories/never", HTTP_IF_MATCH='"2"')
    assert (response.status_code, response.json()) == (412, {"detail": "The entry does not exist."})
    assert (never_there.status_code, never_there.json()) == (response.status_code, response.json())
    assert stored.get(URL).status_code == 200


def test_a_put_with_if_none_match_star_creates_a_missing_entry(owner_api):
    response = owner_api.put(URL, {"value": "vim"}, format="json", HTTP_IF_NONE_MATCH="*")
    assert response.status_code == 201
    assert response["ETag"] == '"1"'


def test_a_put_with_if_none_match_star_leaves_an_existing_entry_alone(stored):
    response = stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_NONE_MATCH="*")
    assert response.status_code == 412
    assert "version 2" in response.json()["detail"]
    assert stored.get(URL).json()["value"] == "emacs"
    assert stored.get(URL + "/history").json()["count"] == 2


def test_if_none_match_means_nothing_to_a_patch_of_a_missing_entry(owner_api):
    assert owner_api.patch(URL, {"kind": "tool"}, format="json", HTTP_IF_NONE_MATCH="*").status_code == 404


def test_a_patch_or_delete_with_if_none_match_star_leaves_an_existing_entry_alone(stored):
    # * matches any current entry (RFC 9110, 13.1.2), for every write, not only a PUT's create.
    patch = stored.patch(URL, {"kind": "tool"}, format="json", HTTP_IF_NONE_MATCH="*")
    delete = stored.delete(URL, HTTP_IF_NONE_MATCH="*")
    for refused in (patch, delete):
        assert (refused.status_code, refused.json()) == (412, {"detail": "The entry is at version 2."})
    entry = stored.get(URL).json()
    assert (entry["value"], entry["kind"], entry["version"]) == ("emacs", "preference", 2)
    assert stored.get(URL + "/history").json()["count"] == 2


@pytest.mark.parametrize("header", ['"2"', 'W/"2"', '"1", "2"'])
def test_a_write_whose_if_none_match_names_the_current_etag_is_refused(stored, header):
    put = stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_NONE_MATCH=header)
    patch = stored.patch(URL, {"kind": "tool"}, format="json", HTTP_IF_NONE_MATCH=header)
    delete = stored.delete(URL, HTTP_IF_NONE_MATCH=header)

    assert (put.status_code, patch.status_code, delete.status_code) == (412, 412, 412)
    assert "version 2" in put.json()["detail"]
    assert stored.get(URL).json()["value"] == "emacs"
    assert stored.get(URL + "/history").json()["count"] == 2


def test_a_write_whose_if_none_match_names_another_etag_applies(stored, owner_api):
    assert stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_NONE_MATCH='"1"').status_code == 200
    assert stored.get(URL).json()["value"] == "nano"
    created = owner_api.put(URL + "-new", {"value": "vim"}, format="json", HTTP_IF_NONE_MATCH='"1"')
    assert created.status_code == 201


@pytest.mark.parametrize("none_match", ['"2"', "*", 'W/"2", "7"'])
def test_if_match_and_an_if_none_match_naming_the_same_version_refuse_the_write(stored, none_match):
    # If-None-Match is evaluated after If-Match held (RFC 9110, 13.2.2): both name the version the write finds.
    put = stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_MATCH='"2"', HTTP_IF_NONE_MATCH=none_match)
    delete = stored.delete(URL, HTTP_IF_MATCH='"2"', HTTP_IF_NONE_MATCH=none_match)

    assert (put.status_code, delete.status_code) == (412, 412)
    assert stored.get(URL).json()["value"] == "emacs"


def test_if_match_and_an_if_none_match_naming_another_version_apply(stored):
    put = stored.put(URL, {"value": "nano"}, format="json", HTTP_IF_MATCH='"2"', HTTP_IF_NONE_MATCH='"1"')

    assert put.status_code == 200 and put["ETag"] == '"3"'


def test_a_post_to_the_list_honours_the_preconditions_as_a_put_does(stored):
    listing = "/api/v1/users/alice/memories/"
    stale = stored.post(listing, {"key": "editor", "value": "nano"}, format="json", HTTP_IF_MATCH='"1"')
    only_new = stored.post(listing, {"key": "editor", "value": "nano"}, format="json", HTTP_IF_NONE_MATCH="*")
    for refused in (stale, only_new):
        assert (refused.status_code, refused.json()) == (412, {"detail": "The entry is at version 2."})
    assert stored.get(URL).json()["value"] == "emacs"

    current = stored.post(listing, {"key": "editor", "value": "nano"}, format="json", HTTP_IF_MATCH='"2"')
    created = stored.post(listing, {"key": "shell", "value": "zsh"}, format="json", HTTP_IF_NONE_MATCH="*")
    assert (current.status_code, current.json()["version"]) == (200, 3)
    assert (created.status_code, created.json()["version"]) == (201, 1)


def test_a_post_to_the_list_honours_if_none_match_naming_etags(stored):
    listing = "/api/v1/users/alice/memories/"
    named = stored.post(listing, {"key": "editor", "value": "nano"}, format="json", HTTP_IF_NONE_MATCH='"2"')
    both = stored.post(
        listing, {"key": "editor", "value": "nano"}, format="json", HTTP_IF_MATCH='"2"', HTTP_IF_NONE_MATCH='"2"'
    )
    for refused in (named, both):
        assert refused.status_code == 412
    assert stored.get(URL).json()["value"] == "emacs"
    other = stored.post(listing, {"key": "editor", "value": "nano"}, format="json", HTTP_IF_NONE_MATCH='"1"')
    assert (other.status_code, other.json()["version"]) == (200, 3)
