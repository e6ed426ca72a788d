"""The dashboard's writes: create, edit, delete, forget and the API token, all through the services."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from memories import selectors, services
from memories.models import MemoryEntry, MemoryEvent


@pytest.fixture
def language(owner):
    return services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python").entry


def test_the_create_form_stores_a_memory_and_opens_it(owner_client, owner):
    response = owner_client.post(
        "/memory/new/",
        {"uid": "alice", "key": "language", "value": "prefers Python", "kind": "fact", "meta": '{"source": "chat"}'},
    )
    assert response.status_code == 302
    assert response["Location"] == "/memory/?uid=alice&key=language"
    entry = selectors.entry_get(owner=owner, uid="alice", key="language")
    assert (entry.value, entry.kind, entry.meta) == ("prefers Python", "fact", {"source": "chat"})
    assert MemoryEvent.objects.get(owner=owner, key="language").actor == owner


def test_the_create_form_starts_with_the_uid_it_was_opened_for(owner_client):
    page = owner_client.get("/memory/new/?uid=alice").content.decode()
    assert 'name="uid" value="alice"' in page
    assert '<label for="id_value">Value</label>' in page


def test_a_bad_field_is_named_next_to_it_and_what_was_typed_is_kept(owner_client, owner):
    long_key = "k" * 256
    response = owner_client.post(
        "/memory/new/",
        {"uid": "alice", "key": long_key, "value": "typed text", "kind": "not a kind!", "meta": "{oops"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert '<p class="error" id="id_key_error">must be at most 255 characters; got 256.</p>' in page
    assert "must start with a letter or digit" in page
    assert "must be valid JSON (line 1, column 2" in page
    assert f'value="{long_key}"' in page and ">\ntyped text</textarea>" in page and ">\n{oops</textarea>" in page
    assert not MemoryEntry.objects.exists()


def test_a_value_over_the_byte_limit_names_the_limit(owner_client, settings):
    settings.MEMORYHUB_MAX_VALUE_BYTES = 8
    page = owner_client.post(
        "/memory/new/", {"uid": "alice", "key": "k", "value": "ééééé", "kind": "fact", "meta": "{}"}
    )
    assert "must be at most 8 bytes (UTF-8); got 10." in page.content.decode()


def test_meta_must_be_a_json_object(owner_client):
    page = owner_client.post(
        "/memory/new/", {"uid": "alice", "key": "k", "value": "v", "kind": "fact", "meta": "[1, 2]"}
    )
    assert "must be a JSON object." in page.content.decode()


@pytest.mark.parametrize("depth", [1000, 5000])
def test_meta_nested_past_any_parser_is_a_field_error_not_a_server_error(owner_client, depth):
    deep = "[" * depth + "]" * depth
    page = owner_client.post("/memory/new/", {"uid": "alice", "key": "k", "value": "v", "kind": "fact", "meta": deep})

    assert page.status_code == 200
    assert "must be nested at most 20 levels deep" in page.content.decode()
    assert not MemoryEntry.objects.exists()


def test_creating_a_key_that_exists_asks_to_edit_it_instead(owner_client, language):
    page = owner_client.post(
        "/memory/new/", {"uid": "alice", "key": "language", "value": "x", "kind": "fact", "meta": "{}"}
    )
    assert "has a memory with this key already" in page.content.decode()
    language.refresh_from_db()
    assert language.value == "prefers Python"


def test_the_edit_form_changes_the_entry_and_records_the_change(owner_client, owner, language):
    form = owner_client.get("/memory/edit/?uid=alice&key=language").content.decode()
    assert "prefers Python</textarea>" in form and 'name="version" value="1"' in form
    response = owner_client.post(
        "/memory/edit/?uid=alice&key=language",
        {"value": "prefers Rust", "kind": "preference", "meta": "{}", "version": "1"},
    )
    assert response["Location"] == "/memory/?uid=alice&key=language"
    language.refresh_from_db()
    assert (language.value, language.version) == ("prefers Rust", 2)
    history = owner_client.get("/memory/?uid=alice&key=language").content.decode()
    assert '<pre class="diff">prefers <del>Python</del><ins>Rust</ins></pre>' in history


def test_an_edit_made_on_a_stale_version_is_refused_and_kept_on_screen(owner_client, owner, language):
    services.entry_put(owner=owner, uid="alice", key="language", value="changed by an agent")
    response = owner_client.post(
        "/memory/edit/?uid=alice&key=language",
        {"value": "my edit", "kind": "preference", "meta": "{}", "version": "1"},
    )
    page = response.content.decode()
    assert "changed while you were editing it (it is now at version 2)" in page and "my edit</textarea>" in page
    language.refresh_from_db()
    assert language.value == "changed by an agent"


def test_deleting_asks_first_then_deletes_and_keeps_the_history(owner_client, owner, language):
    assert "Delete language?" in owner_client.get("/memory/delete/?uid=alice&key=language").content.decode()
    assert selectors.entry_get(owner=owner, uid="alice", key="language") is not None
    response = owner_client.post("/memory/delete/?uid=alice&key=language", {"version": 1})
    assert response["Location"] == "/user/?uid=alice"
    assert selectors.entry_get(owner=owner, uid="alice", key="language") is None
    assert list(MemoryEvent.objects.filter(owner=owner).values_list("action", flat=True).order_by("id")) == [
        "create",
        "delete",
    ]


def test_forgetting_a_user_asks_first_then_deletes_every_memory(owner_client, owner, language):
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim")
    services.entry_put(owner=owner, uid="bob", key="editor", value="uses emacs")
    assert (
        "All <strong>2</strong> memories about <strong>alice</strong>"
        in owner_client.get("/user/forget/?uid=alice").content.decode()
    )
    response = owner_client.post("/user/forget/?uid=alice", follow=True)
    assert "Forgot <bdi>alice</bdi>: 2 memories deleted, history kept." in response.content.decode()
    assert list(MemoryEntry.objects.values_list("uid", flat=True)) == ["bob"]


def test_writes_without_the_csrf_token_are_refused(owner, language):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.post("/memory/delete/?uid=alice&key=language").status_code == 403
    assert client.post("/user/forget/?uid=alice").status_code == 403
    assert MemoryEntry.objects.count() == 1


def test_an_account_cannot_change_another_accounts_memories(stranger_client, owner, language):
    edit = {"value": "hijacked", "kind": "preference", "meta": "{}", "version": "1"}
    assert stranger_client.post("/memory/edit/?uid=alice&key=language&account=owner", edit).status_code == 404
    assert (
        stranger_client.post("/memory/delete/?uid=alice&key=language&account=owner", {"version": 1}).status_code == 404
    )
    assert stranger_client.post("/user/forget/?uid=alice&account=owner").status_code == 404
    language.refresh_from_db()
    assert language.value == "prefers Python"


def test_staff_edit_another_accounts_memory_as_themselves(staff_client, staff, owner, language):
    response = staff_client.post(
        "/memory/edit/?uid=alice&key=language&account=owner",
        {"value": "fixed by staff", "kind": "preference", "meta": "{}", "version": "1"},
    )
    assert response["Location"] == "/memory/?uid=alice&key=language&account=owner"
    language.refresh_from_db()
    assert language.value == "fixed by staff"
    assert MemoryEvent.objects.filter(owner=owner).latest("id").actor == staff


def test_the_token_page_shows_replaces_and_revokes_the_accounts_own_token(owner_client, owner):
    old_key = Token.objects.get(user=owner).key
    assert f'value="{old_key}"' in owner_client.get("/token/").content.decode()
    owner_client.post("/token/", {"action": "create"})
    new_key = Token.objects.get(user=owner).key
    assert new_key != old_key
    assert f'value="{new_key}"' in owner_client.get("/token/").content.decode()
    owner_client.post("/token/", {"action": "revoke"})
    assert not Token.objects.filter(user=owner).exists()
    assert "You have no token" in owner_client.get("/token/").content.decode()


def test_the_token_page_renders_in_three_queries(owner_client, django_assert_num_queries):
    # session, account, the token
    with django_assert_num_queries(3):
        assert owner_client.get("/token/").status_code == 200


def test_the_edit_form_renders_in_three_queries(owner_client, language, django_assert_num_queries):
    # session, account, the entry
    with django_assert_num_queries(3):
        assert owner_client.get("/memory/edit/?uid=alice&key=language").status_code == 200


def test_an_empty_form_names_each_missing_field_and_its_limit(owner_client):
    page = owner_client.post(
        "/memory/new/", {"uid": "", "key": "", "value": "", "kind": "", "meta": ""}
    ).content.decode()
    assert '<p class="error" id="id_uid_error">must not be empty (1 to 255 characters).</p>' in page
    assert '<p class="error" id="id_key_error">must not be empty (1 to 255 characters).</p>' in page
    assert '<p class="error" id="id_kind_error">must be 1 to 32 characters; got 0.</p>' in page
    assert not MemoryEntry.objects.exists()


def test_saving_an_untouched_multi_line_value_changes_nothing(owner_client, owner):
    services.entry_put(owner=owner, uid="alice", key="notes", value="first line\nsecond line")
    response = owner_client.post(
        "/memory/edit/?uid=alice&key=notes",
        {"value": "first line\r\nsecond line", "kind": "preference", "meta": "{}", "version": "1"},
        follow=True,
    )
    assert "Nothing changed." in response.content.decode()
    assert selectors.entry_get(owner=owner, uid="alice", key="notes").version == 1


def test_the_confirmation_and_create_pages_render_in_few_queries(owner_client, language, django_assert_num_queries):
    # session, account, the account's policy (its default privacy, preselected)
    with django_assert_num_queries(3):
        assert owner_client.get("/memory/new/?uid=alice").status_code == 200
    # session, account, the entry
    with django_assert_num_queries(3):
        assert owner_client.get("/memory/delete/?uid=alice&key=language").status_code == 200
    # session, account, the count of the user's entries, the count of their history (what erasing removes)
    with django_assert_num_queries(4):
        assert owner_client.get("/user/forget/?uid=alice").status_code == 200


def _box(moment) -> str:
    """A time as the expiry box (datetime-local, to the second) sends it, in the hub's time zone."""
    return timezone.localtime(moment).strftime("%Y-%m-%dT%H:%M:%S")


def test_the_forms_set_keep_extend_and_clear_an_expiry(owner_client, owner):
    soon = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    owner_client.post("/memory/new/", {"uid": "alice", "key": "trip", "value": "in Lisbon", "kind": "fact",
                                       "meta": "{}", "expires": _box(soon)})  # fmt: skip
    assert selectors.entry_get(owner=owner, uid="alice", key="trip").expires == soon
    page = owner_client.get("/memory/?uid=alice&key=trip").content.decode()
    assert f'<time datetime="{timezone.localtime(soon).isoformat()}">' in page

    services.entry_update(owner=owner, uid="alice", key="trip", ttl=3600)
    stored = selectors.entry_get(owner=owner, uid="alice", key="trip")
    form = owner_client.get("/memory/edit/?uid=alice&key=trip").content.decode()
    assert f'value="{_box(stored.expires)}"' in form
    edit = {"value": "in Lisbon", "kind": "fact", "meta": "{}", "version": str(stored.version)}
    # The box left as shown keeps the expiry to the microsecond: nothing changes.
    owner_client.post("/memory/edit/?uid=alice&key=trip", {**edit, "expires": _box(stored.expires)})
    assert selectors.entry_get(owner=owner, uid="alice", key="trip").expires == stored.expires

    later = soon + timedelta(days=30)
    owner_client.post("/memory/edit/?uid=alice&key=trip", {**edit, "expires": _box(later)})
    extended = selectors.entry_get(owner=owner, uid="alice", key="trip")
    assert (extended.expires, extended.version) == (later, stored.version + 1)
    owner_client.post("/memory/edit/?uid=alice&key=trip", {**edit, "expires": "", "version": str(extended.version)})
    assert selectors.entry_get(owner=owner, uid="alice", key="trip").expires is None
    assert "<dt>Expires</dt><dd>never</dd>" in owner_client.get("/memory/?uid=alice&key=trip").content.decode()


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        (lambda now: _box(now - timedelta(minutes=5)), "must be in the future"),
        (lambda now: _box(now + timedelta(days=365 * 11)), "must be at most 315360000 seconds ahead"),
        (lambda now: "next tuesday", "Enter a valid date/time"),
    ],
)
def test_a_bad_expiry_is_named_next_to_its_field_and_nothing_is_stored(owner_client, owner, language, typed, says):
    now = timezone.now()
    edit = {"value": "prefers Python", "kind": "preference", "meta": "{}", "version": "1", "expires": typed(now)}
    response = owner_client.post("/memory/edit/?uid=alice&key=language", edit)
    page = response.content.decode()
    assert response.status_code == 200
    assert says in page and 'id="id_expires_error"' in page
    created = owner_client.post(
        "/memory/new/",
        {"uid": "alice", "key": "trip", "value": "x", "kind": "fact", "meta": "{}", "expires": typed(now)},
    )
    assert says in created.content.decode()
    assert selectors.entry_get(owner=owner, uid="alice", key="trip") is None
    assert selectors.entry_get(owner=owner, uid="alice", key="language").version == 1
