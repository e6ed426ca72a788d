"""In a real browser: delete a memory, find it among the deleted ones, restore it, and read its history as a diff."""

import pytest
from playwright.sync_api import Page, expect

from memories import selectors, services
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_a_deleted_memory_is_found_in_the_trash_restored_and_its_changes_shown_as_a_diff(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim with a tmux split")
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses Neovim with a tmux split")
    log_in(page, owner, "owner-password-1")

    page.goto("/memory/?uid=alice&key=editor")
    page.get_by_role("link", name="Delete…").click()
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_contain_text("Deleted editor")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Deleted").click()
    row = page.locator("table.trash tbody tr", has_text="editor")
    expect(row).to_contain_text("uses Neovim with a tmux split")
    row.get_by_role("button", name="Restore editor of alice").click()

    expect(page.get_by_role("status")).to_contain_text("Restored editor for alice at version 3.")
    expect(page.locator("pre.value")).to_have_text("uses Neovim with a tmux split")
    assert selectors.entry_get(owner=owner, uid="alice", key="editor").version == 3
    change = page.locator("pre.diff").first
    expect(change.locator("del")).to_have_text("vim")
    expect(change.locator("ins")).to_have_text("Neovim")


def test_a_forgotten_users_memories_wait_in_the_trash_and_come_back_one_by_one(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="carol", key="diet", value="is vegetarian")
    services.entry_put(owner=owner, uid="carol", key="city", value="lives in São Paulo")
    services.user_forget(owner=owner, uid="carol")
    log_in(page, owner, "owner-password-1")

    page.goto("/trash/")
    page.get_by_role("link", name="carol").first.click()
    expect(page.locator("main h1")).to_contain_text("carol")
    expect(page.locator("table.trash tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Restore diet of carol").click()

    expect(page.get_by_role("status")).to_contain_text("Restored diet for carol")
    page.goto("/user/?uid=carol")
    expect(page.locator("table.entries tbody tr")).to_have_count(1)


def test_a_deleted_memorys_own_page_restores_it(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="timezone", value="Europe/Lisbon")
    services.entry_delete(owner=owner, uid="alice", key="timezone")
    log_in(page, owner, "owner-password-1")

    page.goto("/memory/?uid=alice&key=timezone")
    expect(page.get_by_text("This memory was deleted")).to_be_visible()
    page.get_by_role("button", name="Restore").click()

    expect(page.locator("pre.value")).to_have_text("Europe/Lisbon")
