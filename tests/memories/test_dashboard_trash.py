"""What the dashboard keeps and now shows: deleted memories with restore, diffs, error pages, logging out."""

import pytest
from django.test import Client, RequestFactory, override_settings

from memories import selectors, services


@pytest.fixture
def deleted_memories(owner, stranger):
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim")
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses Neovim")
    services.entry_delete(owner=owner, uid="alice", key="editor")
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    services.entry_put(owner=owner, uid="carol", key="diet", value="is vegetarian")
    services.user_forget(owner=owner, uid="carol")
    services.entry_put(owner=stranger, uid="alice", key="secret", value="the stranger's deleted memory")
    services.entry_delete(owner=stranger, uid="alice", key="secret")


def test_the_trash_lists_each_deleted_memory_with_its_last_value_newest_first(owner_client, deleted_memories):
    page = owner_client.get("/trash/").content.decode()

    assert page.index("is vegetarian") < page.index("uses Neovim")  # carol was forgotten last
    assert "language" not in page  # alive
    assert "stranger" not in page  # another account's deletions never show
    assert page.count(">Restore</button>") == 2


def test_a_forgotten_users_trash_is_reachable_although_no_memory_is_left(owner_client, deleted_memories):
    page = owner_client.get("/trash/?uid=carol").content.decode()

    assert "is vegetarian" in page and "uses Neovim" not in page


def test_restore_from_the_trash_brings_the_memory_back_at_the_next_version(owner, owner_client, deleted_memories):
    response = owner_client.post("/memory/restore/?uid=alice&key=editor", follow=True)

    entry = selectors.entry_get(owner=owner, uid="alice", key="editor")
    assert (entry.value, entry.version) == ("uses Neovim", 3)
    assert "Restored <bdi>editor</bdi> for <bdi>alice</bdi> at version 3." in response.content.decode()
    assert "uses Neovim" not in owner_client.get("/trash/").content.decode()


def test_restoring_a_memory_that_exists_again_changes_nothing_and_says_so(owner, owner_client, deleted_memories):
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses Emacs now")

    response = owner_client.post("/memory/restore/?uid=alice&key=editor", follow=True)

    assert "exists already" in response.content.decode()
    assert selectors.entry_get(owner=owner, uid="alice", key="editor").value == "uses Emacs now"


def test_another_accounts_deleted_memory_cannot_be_restored(stranger, owner_client, deleted_memories):
    assert owner_client.post("/memory/restore/?uid=alice&key=secret").status_code == 404
    assert selectors.entry_get(owner=stranger, uid="alice", key="secret") is None


def test_restore_needs_a_post_and_a_link_to_it_says_so_and_restores_nothing(owner, owner_client, deleted_memories):
    response = owner_client.get("/memory/restore/?uid=alice&key=editor")
    assert (response.status_code, response["Allow"]) == (405, "POST")
    page = response.content.decode()
    assert "takes a button, not a link" in page and "Nothing was changed." in page
    assert 'href="/trash/"' in page
    assert selectors.entry_get(owner=owner, uid="alice", key="editor") is None


def test_a_deleted_memorys_page_offers_restore(owner_client, deleted_memories):
    page = owner_client.get("/memory/?uid=alice&key=editor").content.decode()

    assert "This memory was deleted" in page
    assert 'action="/memory/restore/?uid=alice&amp;key=editor"' in page


def test_a_changed_value_shows_what_was_removed_and_added(owner, owner_client):
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim on weekdays")
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses Neovim on weekdays")

    page = owner_client.get("/memory/?uid=alice&key=editor").content.decode()

    assert "<del>vim</del><ins>Neovim</ins> on weekdays" in page


def test_a_long_change_is_folded_behind_a_summary(owner, owner_client):
    services.entry_put(owner=owner, uid="alice", key="notes", value="a" * 700)
    services.entry_put(owner=owner, uid="alice", key="notes", value="a" * 700 + " more")

    page = owner_client.get("/memory/?uid=alice&key=notes").content.decode()

    assert "<summary>700 → 705 characters: show the change</summary>" in page


def test_markup_in_a_value_stays_text_in_the_diff(owner, owner_client):
    services.entry_put(owner=owner, uid="alice", key="x", value="plain")
    services.entry_put(owner=owner, uid="alice", key="x", value="<script>alert(1)</script>")

    page = owner_client.get("/memory/?uid=alice&key=x").content.decode()

    assert "<script>alert" not in page and "&lt;script&gt;" in page


def test_a_missing_page_is_styled_with_navigation(owner_client):
    response = owner_client.get("/no-such-page/")

    assert response.status_code == 404
    page = response.content.decode()
    assert "Nothing here" in page and 'aria-label="Main"' in page and "hub.css" in page


def test_a_missing_memory_says_what_is_missing(owner_client):
    page = owner_client.get("/memory/?uid=alice&key=nothing").content.decode()

    assert "No memory has that uid and key." in page


def test_a_refused_form_post_is_a_styled_403(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    response = client.post("/memory/restore/?uid=alice&key=editor")

    assert response.status_code == 403
    assert "Not allowed" in response.content.decode() and "hub.css" in response.content.decode()


@override_settings(DEBUG=False)
def test_a_server_error_is_a_styled_page_with_navigation(owner_client):
    from django.views.defaults import server_error

    response = server_error(RequestFactory().get("/users/"))

    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode() and 'href="/users/"' in response.content.decode()


def test_logging_out_says_so_on_the_login_page(owner_client):
    response = owner_client.post("/logout/", follow=True)

    assert response.request["PATH_INFO"] == "/login/"
    assert "You are logged out." in response.content.decode()


def test_the_trash_page_costs_the_same_few_queries_however_much_was_deleted(
    owner, owner_client, deleted_memories, django_assert_num_queries
):
    for number in range(30):
        services.entry_put(owner=owner, uid="dave", key=f"k{number}", value="v")
        services.entry_delete(owner=owner, uid="dave", key=f"k{number}")
    # session, account, the page's count, the page's deletions with their actors
    with django_assert_num_queries(4):
        owner_client.get("/trash/")
