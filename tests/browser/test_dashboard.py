"""The dashboard in a real browser: what a person clicks, types and sees."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Dialog, Page, expect

from memories import selectors, services
from memories.models import MemoryEntry, MemoryEvent
from tests.support.browser import log_in

pytestmark = pytest.mark.browser

SCRIPT = "<script>alert(1)</script>"


def test_a_person_logs_in_and_out(page: Page, owner) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    log_in(page, owner, "owner-password-1")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.goto("/users/")
    expect(page).to_have_url(re.compile(r"/login/"))


def test_a_wrong_password_is_refused_with_a_message(page: Page, owner) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill("owner")
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username and password")


def test_a_person_creates_searches_edits_and_reads_the_history_of_a_memory(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim")
    log_in(page, owner, "owner-password-1")

    page.get_by_role("link", name="Users", exact=True).click()
    page.get_by_role("link", name="alice").click()
    page.locator("main").get_by_role("link", name="New memory").click()
    expect(page.get_by_label("User (uid)")).to_have_value("alice")
    page.get_by_label("Key").fill("language")
    page.get_by_label("Value").fill("prefers Python")
    page.get_by_label("Kind").fill("fact")
    page.get_by_role("button", name="Store").click()
    expect(page.get_by_role("status")).to_contain_text("Stored language for alice.")
    expect(page.locator("pre.value")).to_have_text("prefers Python")

    page.get_by_role("link", name="alice").click()
    page.get_by_role("searchbox").fill("PYTHON")
    page.get_by_role("button", name="Search").click()
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("prefers Python")
    page.get_by_label("Kind").select_option("preference")
    page.get_by_role("searchbox").fill("")
    page.get_by_role("button", name="Search").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("uses vim")

    page.goto("/user/?uid=alice")
    page.get_by_role("link", name="language").click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Value").fill("prefers Rust")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    expect(page.locator("pre.value")).to_have_text("prefers Rust")
    latest_change = page.locator("ol.history > li").first
    expect(latest_change).to_contain_text("updated")
    expect(latest_change.locator("pre.diff del")).to_have_text("Python")
    expect(latest_change.locator("pre.diff ins")).to_have_text("Rust")
    assert selectors.entry_get(owner=owner, uid="alice", key="language").version == 2


def test_a_mistake_in_the_form_is_shown_next_to_its_field_and_the_typing_is_kept(page: Page, owner) -> None:
    log_in(page, owner, "owner-password-1")
    page.goto("/memory/new/?uid=alice")
    page.get_by_label("Key").fill("language")
    page.get_by_label("Value").fill("prefers Python")
    page.get_by_label("Kind").fill("no spaces allowed")
    page.get_by_label("Meta").fill('{"source": ')
    page.get_by_role("button", name="Store").click()
    expect(page.locator("#id_kind_error")).to_contain_text("must start with a letter or digit")
    expect(page.locator("#id_meta_error")).to_contain_text("must be valid JSON")
    expect(page.get_by_label("Value")).to_have_value("prefers Python")
    expect(page.get_by_label("Meta")).to_have_value('{"source": ')
    assert not MemoryEntry.objects.exists()


def test_each_privacy_choice_sits_on_the_line_of_its_words(page: Page, owner) -> None:
    log_in(page, owner, "owner-password-1")
    page.goto("/memory/new/?uid=alice")
    for choice in ("shared", "local"):
        radio = page.get_by_role("radio", name=re.compile(f"^{choice}:"))
        box, label = radio.bounding_box(), radio.locator("xpath=..").bounding_box()
        assert box is not None and label is not None
        # Not a full-width control with its words on a line below: one line of both.
        assert box["width"] < 40 and label["height"] < 2 * box["height"] + 10


def test_a_person_sets_and_clears_an_expiry_and_a_time_past_is_refused(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="trip", value="in Lisbon this week")
    log_in(page, owner, "owner-password-1")
    # Seconds other than zero: the browser writes a datetime-local value whose seconds are zero without them
    # ("...T23:36"), the same moment in another spelling.
    moment = (timezone.localtime() + timedelta(days=3)).replace(second=17, microsecond=0)

    shown_expiry = page.locator('dl.facts dt:text-is("Expires") + dd')
    page.goto("/memory/?uid=alice&key=trip")
    expect(shown_expiry).to_have_text("never")
    page.get_by_role("link", name="Edit").click()
    expires = page.get_by_label("Expires")
    expires.fill((timezone.localtime() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#id_expires_error")).to_contain_text("must be in the future")
    assert selectors.entry_get(owner=owner, uid="alice", key="trip").expires is None

    page.get_by_label("Expires").fill(moment.strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    expect(shown_expiry.locator("time")).to_have_attribute("datetime", moment.isoformat())
    assert selectors.entry_get(owner=owner, uid="alice", key="trip").expires == moment

    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("Expires")).to_have_value(moment.strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_label("Expires").fill("")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    expect(shown_expiry).to_have_text("never")
    assert selectors.entry_get(owner=owner, uid="alice", key="trip").expires is None


def test_a_person_deletes_a_memory_and_forgets_a_user_after_confirming(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    services.entry_put(owner=owner, uid="bob", key="tone", value="answers in French")
    services.entry_put(owner=owner, uid="bob", key="editor", value="uses emacs")
    log_in(page, owner, "owner-password-1")

    page.goto("/memory/?uid=alice&key=language")
    page.get_by_role("link", name="Delete…").click()
    expect(page.get_by_role("heading", name="Delete language?")).to_be_visible()
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_contain_text("Deleted language.")
    assert selectors.entry_get(owner=owner, uid="alice", key="language") is None

    page.goto("/user/?uid=bob")
    page.get_by_role("link", name="Forget bob…").click()
    expect(page.get_by_role("form", name="Forget")).to_contain_text("All 2 memories about bob will be deleted.")
    page.get_by_role("button", name="Forget bob").click()
    expect(page.get_by_role("status")).to_contain_text("Forgot bob: 2 memories deleted, history kept.")
    assert not MemoryEntry.objects.filter(owner=owner, uid="bob").exists()
    assert MemoryEvent.objects.filter(owner=owner, uid="bob").count() == 4


def test_a_person_erases_a_user_and_only_the_line_saying_so_stays(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="carol", key="diet", value="no peanuts")
    services.entry_put(owner=owner, uid="carol", key="diet", value="no peanuts, no shellfish")
    log_in(page, owner, "owner-password-1")

    page.goto("/user/?uid=carol")
    page.get_by_role("link", name="Forget carol…").click()
    erase = page.get_by_role("form", name="Erase")
    expect(erase).to_contain_text("all 2 events of their history")
    erase.get_by_role("button", name="Erase carol").click()

    expect(page.get_by_role("status")).to_contain_text("carol")
    assert not MemoryEntry.objects.filter(owner=owner, uid="carol").exists()
    remaining = list(MemoryEvent.objects.filter(owner=owner, uid="carol"))
    assert [event.action for event in remaining] == ["erase"]
    assert "peanuts" not in repr(vars(remaining[0]))


def test_a_script_in_a_value_stays_text_and_never_runs(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key=SCRIPT, value=SCRIPT, meta={"note": SCRIPT})
    dialogs: list[str] = []

    def note_and_dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", note_and_dismiss)
    log_in(page, owner, "owner-password-1")

    page.goto("/user/?uid=alice")
    expect(page.locator("td.preview")).to_have_text(SCRIPT)
    page.get_by_role("link", name=SCRIPT).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(SCRIPT)
    expect(page.locator("pre.value")).to_have_text(SCRIPT)
    expect(page.locator("pre.json")).to_contain_text(SCRIPT)
    assert page.locator("main script").count() == 0
    assert dialogs == []


def test_every_control_on_a_users_page_is_reachable_with_the_tab_key(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    log_in(page, owner, "owner-password-1")
    page.goto("/user/?uid=alice")
    reached = set()
    for _ in range(30):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("document.activeElement.id || document.activeElement.textContent.trim()"))
    for control in [
        "Skip to content",
        "Users",
        "New memory",
        "Forget alice…",
        "q",
        "kind",
        "Search",
        "language",
        "Log out",
    ]:
        assert control in reached, f"{control!r} is not reachable with Tab"


def test_staff_switch_to_all_accounts_and_open_another_accounts_memory(page: Page, staff, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    log_in(page, staff, "staff-password-1")
    page.get_by_role("link", name="Users", exact=True).click()
    expect(page.locator("main")).to_contain_text("No users yet")
    page.get_by_role("link", name="show all accounts").click()
    page.get_by_role("link", name="alice").click()
    expect(page.get_by_role("status").first).to_contain_text("Staff view: these are owner's memories")
    page.get_by_role("link", name="language").click()
    expect(page.locator("pre.value")).to_have_text("prefers Python")
