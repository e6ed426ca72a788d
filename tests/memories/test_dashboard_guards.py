"""The dashboard loses no newer change and no typed name: deletes carry their version, untouched forms stay."""

import pytest

from memories import selectors, services


@pytest.fixture
def language(owner):
    return services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python").entry


def test_a_delete_confirmed_on_a_version_that_changed_since_keeps_the_newer_value(owner, owner_client, language):
    page = owner_client.get("/memory/delete/?uid=alice&key=language").content.decode()
    assert '<input type="hidden" name="version" value="1">' in page
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Rust now")

    response = owner_client.post("/memory/delete/?uid=alice&key=language", {"version": 1}, follow=True)

    assert "changed since you asked to delete it (it is now at version 2); it was not deleted" in (
        response.content.decode()
    )
    assert selectors.entry_get(owner=owner, uid="alice", key="language").value == "prefers Rust now"


def test_a_delete_without_the_version_it_showed_is_refused(owner, owner_client, language):
    assert owner_client.post("/memory/delete/?uid=alice&key=language").status_code == 400
    assert selectors.entry_get(owner=owner, uid="alice", key="language") is not None


def test_saving_an_untouched_form_of_a_multi_line_value_changes_nothing(owner, owner_client):
    entry = services.entry_put(owner=owner, uid="alice", key="notes", value="line one\r\nline two\nline three").entry
    # What a browser sends back for the untouched textarea: every line break as CRLF.
    form = {"value": "line one\r\nline two\r\nline three", "kind": entry.kind, "meta": "{}", "version": 1}

    response = owner_client.post("/memory/edit/?uid=alice&key=notes", form, follow=True)

    assert "Nothing changed." in response.content.decode()
    stored = selectors.entry_get(owner=owner, uid="alice", key="notes")
    assert (stored.value, stored.version) == ("line one\r\nline two\nline three", 1)


@pytest.mark.parametrize("uid", ["alice ", " alice", "alice\u00a0", "alice\u3000"])
def test_the_create_form_keeps_a_uid_exactly_as_typed(owner, owner_client, uid):
    form = {"uid": uid, "key": " padded key ", "value": "v", "kind": "preference", "meta": "{}"}

    owner_client.post("/memory/new/", form)

    assert selectors.entry_get(owner=owner, uid=uid, key=" padded key ") is not None
    assert selectors.entry_get(owner=owner, uid="alice", key="padded key") is None
