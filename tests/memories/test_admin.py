from datetime import timedelta

import pytest
from django.utils import timezone

from memories import selectors, services
from memories.models import MemoryEntry, MemoryEvent


@pytest.fixture
def admin_client_logged_in(client, staff):
    client.force_login(staff)
    return client


def test_editing_an_entry_in_the_admin_goes_through_the_services(admin_client_logged_in, owner, staff):
    entry = services.entry_put(owner=owner, uid="alice", key="language", value="Python").entry

    response = admin_client_logged_in.post(
        f"/admin/memories/memoryentry/{entry.pk}/change/",
        {"value": "Rust", "kind": "fact", "meta": '{"edited": true}', "shown_version": "1"},
    )

    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.value, entry.kind, entry.meta, entry.version) == ("Rust", "fact", {"edited": True}, 2)
    update = selectors.entry_history(owner=owner, uid="alice", key="language").first()
    assert (update.action, update.value_before, update.value_after, update.actor) == ("update", "Python", "Rust", staff)


def test_a_value_left_as_it_was_in_the_admin_keeps_its_line_breaks_and_spaces(admin_client_logged_in, owner):
    value = "  first line\nsecond line\n" + "x" * (65536 - 26) + "\n"  # at the byte limit, with LF
    entry = services.entry_put(owner=owner, uid="alice", key="note", value=value).entry
    change = f"/admin/memories/memoryentry/{entry.pk}/change/"

    # As a browser sends the textarea back: every line break as CRLF. Only the kind changes.
    sent = value.replace("\n", "\r\n")
    response = admin_client_logged_in.post(change, {"value": sent, "kind": "fact", "meta": "{}", "shown_version": "1"})

    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.value, entry.kind, entry.version) == (value, "fact", 2)
    update = selectors.entry_history(owner=owner, uid="alice", key="note").first()
    assert update.value_before == update.value_after == value

    # A changed value is stored with LF, its spaces kept.
    admin_client_logged_in.post(change, {"value": " a\r\nb ", "kind": "fact", "meta": "{}", "shown_version": "2"})
    entry.refresh_from_db()
    assert entry.value == " a\nb "


def test_adding_an_entry_in_the_admin_records_its_creation(admin_client_logged_in, owner):
    response = admin_client_logged_in.post(
        "/admin/memories/memoryentry/add/",
        {"owner": owner.pk, "uid": "alice", "key": "tz", "value": "CET", "kind": "fact", "meta": "{}"},
    )

    assert response.status_code == 302
    entry = MemoryEntry.objects.get(owner=owner, uid="alice", key="tz")
    assert entry.version == 1
    assert MemoryEvent.objects.filter(owner=owner, key="tz", action="create").count() == 1


def test_the_admin_shows_field_errors_and_writes_nothing(admin_client_logged_in, owner):
    response = admin_client_logged_in.post(
        "/admin/memories/memoryentry/add/",
        {"owner": owner.pk, "uid": "alice", "key": "tz", "value": "CET", "kind": "bad kind", "meta": "[1]"},
    )

    assert response.status_code == 200
    assert "letters, digits" in response.content.decode()
    assert "must be a JSON object" in response.content.decode()
    assert not MemoryEntry.objects.exists()


def test_deleting_in_the_admin_records_the_deletion(admin_client_logged_in, owner):
    entry = services.entry_put(owner=owner, uid="alice", key="language", value="Python").entry
    other = services.entry_put(owner=owner, uid="alice", key="tz", value="CET").entry

    admin_client_logged_in.post(f"/admin/memories/memoryentry/{entry.pk}/delete/", {"post": "yes"})
    admin_client_logged_in.post(
        "/admin/memories/memoryentry/",
        {"action": "delete_selected", "_selected_action": [other.pk], "post": "yes"},
    )

    assert not MemoryEntry.objects.exists()
    assert MemoryEvent.objects.filter(action="delete").count() == 2


def test_the_entry_page_shows_its_history_read_only(admin_client_logged_in, owner):
    entry = services.entry_put(owner=owner, uid="alice", key="language", value="<b>Python</b>").entry
    services.entry_put(owner=owner, uid="alice", key="language", value="Rust")

    page = admin_client_logged_in.get(f"/admin/memories/memoryentry/{entry.pk}/change/").content.decode()

    assert "History (newest first)" in page
    assert "&lt;b&gt;Python&lt;/b&gt;" in page
    assert "<b>Python</b>" not in page
    created = selectors.entry_history(owner=owner, uid="alice", key="language").last()
    assert f"<td>{timezone.localtime(created.at):%Y-%m-%d %H:%M:%S}</td>" in page, "to the second, in the hub's zone"


def test_the_history_button_shows_the_memorys_own_events(admin_client_logged_in, owner, stranger):
    entry = services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python").entry
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Rust")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=stranger, uid="alice", key="language", value="prefers Go")

    response = admin_client_logged_in.get(f"/admin/memories/memoryentry/{entry.pk}/history/", follow=True)

    assert response.redirect_chain[0][1] == 302
    shown = list(response.context["cl"].result_list.values_list("owner", "key", "version"))
    assert sorted(shown) == [(owner.pk, "language", 1), (owner.pk, "language", 2)]


def test_the_list_searches_uid_key_and_value_and_filters_on_kind(admin_client_logged_in, owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python", kind="fact")
    services.entry_put(owner=owner, uid="bob", key="editor", value="vim")

    found = admin_client_logged_in.get("/admin/memories/memoryentry/?q=python").content.decode()
    facts = admin_client_logged_in.get("/admin/memories/memoryentry/?kind__exact=fact").content.decode()

    assert "language" in found and "editor" not in found
    assert "language" in facts and "editor" not in facts


def test_history_cannot_be_edited_in_the_admin(admin_client_logged_in, owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    event = MemoryEvent.objects.get()

    admin_client_logged_in.post(f"/admin/memories/memoryevent/{event.pk}/change/", {"value_after": "forged"})
    admin_client_logged_in.post(f"/admin/memories/memoryevent/{event.pk}/delete/", {"post": "yes"})

    event.refresh_from_db()
    assert event.value_after == "Python"


def test_meta_nested_past_any_parser_is_a_field_error_in_the_admin(admin_client_logged_in, owner):
    deep = "[" * 5000 + "]" * 5000

    response = admin_client_logged_in.post(
        "/admin/memories/memoryentry/add/",
        {"owner": owner.pk, "uid": "alice", "key": "tz", "value": "CET", "kind": "fact", "meta": deep},
    )

    assert response.status_code == 200
    assert "must be nested at most 20 levels deep" in response.content.decode()
    assert not MemoryEntry.objects.exists()


def test_the_admin_sets_an_entrys_privacy_or_leaves_the_accounts_default(admin_client_logged_in, owner):
    services.account_policy_set(account=owner, default_privacy="local")
    added = {"owner": owner.pk, "uid": "alice", "value": "asthma", "kind": "fact", "meta": "{}", "privacy": ""}
    admin_client_logged_in.post("/admin/memories/memoryentry/add/", {**added, "key": "diagnosis"})
    admin_client_logged_in.post("/admin/memories/memoryentry/add/", {**added, "key": "editor", "privacy": "shared"})
    entry = MemoryEntry.objects.get(key="diagnosis")
    assert (entry.privacy, MemoryEntry.objects.get(key="editor").privacy) == ("local", "shared")

    response = admin_client_logged_in.post(
        f"/admin/memories/memoryentry/{entry.pk}/change/",
        {"value": "asthma", "kind": "fact", "meta": "{}", "privacy": "shared", "shown_version": "1"},
    )

    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.privacy, entry.version) == ("shared", 2)


def _admin_time(moment) -> dict[str, str]:
    """A time as the admin's split date and time boxes send it (in the hub's time zone)."""
    local = timezone.localtime(moment)
    return {"expires_0": local.strftime("%Y-%m-%d"), "expires_1": local.strftime("%H:%M:%S")}


def test_the_admin_sets_keeps_extends_and_clears_an_expiry_through_the_services(admin_client_logged_in, owner, staff):
    entry = services.entry_put(owner=owner, uid="alice", key="trip", value="in Lisbon", ttl=3600).entry
    change = f"/admin/memories/memoryentry/{entry.pk}/change/"
    form = {"value": "in Lisbon", "kind": "preference", "meta": "{}", "privacy": "shared"}

    assert "expires_0" in admin_client_logged_in.get(change).content.decode()
    # Saved as shown (to the second): the expiry stays exactly as it was, and nothing changes.
    admin_client_logged_in.post(change, {**form, **_admin_time(entry.expires), "shown_version": "1"})
    assert MemoryEntry.objects.get(pk=entry.pk).expires == entry.expires
    assert MemoryEntry.objects.get(pk=entry.pk).version == 1

    later = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    admin_client_logged_in.post(change, {**form, **_admin_time(later), "shown_version": "1"})
    assert (MemoryEntry.objects.get(pk=entry.pk).expires, MemoryEntry.objects.get(pk=entry.pk).version) == (later, 2)
    assert selectors.entry_history(owner=owner, uid="alice", key="trip").first().actor == staff

    admin_client_logged_in.post(change, {**form, "expires_0": "", "expires_1": "", "shown_version": "2"})
    assert MemoryEntry.objects.get(pk=entry.pk).expires is None


@pytest.mark.parametrize(
    ("moment", "says"),
    [
        (timedelta(hours=-1), "must be in the future"),
        (timedelta(days=365 * 11), "must be at most 315360000 seconds ahead"),
    ],
)
def test_an_expiry_in_the_past_or_too_far_is_a_field_error_in_the_admin(admin_client_logged_in, owner, moment, says):
    added = {"owner": owner.pk, "uid": "alice", "key": "trip", "value": "in Lisbon", "kind": "fact", "meta": "{}"}

    response = admin_client_logged_in.post(
        "/admin/memories/memoryentry/add/", {**added, **_admin_time(timezone.now() + moment)}
    )

    assert response.status_code == 200
    assert says in response.content.decode()
    assert not MemoryEntry.objects.exists()
