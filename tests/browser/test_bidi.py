"""A key holding a direction override (U+202E) or right-to-left letters reorders nothing around it.

The write guard flags such a key, and the dashboard shows it as written; but the words after it in a
message ("... for alice.") and the badges beside it in a list are the dashboard's, and stay in order.
"""

import pytest
from playwright.sync_api import Page

from memories import services
from tests.support.browser import log_in

pytestmark = pytest.mark.browser

OVERRIDDEN = "\u202eevil key"

# The left edge of where the text holding `word` is drawn, inside `selector` (a Range over its characters).
LEFT_OF = """([selector, word]) => {
  const root = document.querySelector(selector);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(word);
    if (at >= 0) {
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + word.length);
      return range.getBoundingClientRect().left;
    }
  }
  return null;
}"""


def test_the_message_after_storing_an_overridden_key_reads_in_order(page: Page, owner) -> None:
    log_in(page, owner, "owner-password-1")
    page.goto("/memory/new/")
    page.get_by_label("User (uid)").fill("alice")
    page.get_by_label("Key").fill(OVERRIDDEN)
    page.get_by_label("Value").fill("a memory")
    page.get_by_role("button", name="Store").click()
    page.get_by_role("status").wait_for()

    stored = page.evaluate(LEFT_OF, [".messages li", "Stored"])
    key = page.evaluate(LEFT_OF, [".messages li", "evil"])
    uid = page.evaluate(LEFT_OF, [".messages li", "alice"])
    assert stored < key < uid


def test_a_flagged_badge_stays_right_of_an_overridden_key_in_the_list(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid="alice", key=OVERRIDDEN, value="a memory")
    log_in(page, owner, "owner-password-1")
    page.goto("/user/?uid=alice")

    link = page.locator("table.entries td a").first.bounding_box()
    badge = page.locator("table.entries td .flag").first.bounding_box()
    assert link is not None and badge is not None
    assert badge["x"] > link["x"]


def test_the_message_after_forgetting_an_overridden_uid_reads_in_order(page: Page, owner) -> None:
    services.entry_put(owner=owner, uid=OVERRIDDEN, key="language", value="a memory")
    log_in(page, owner, "owner-password-1")
    page.goto("/user/forget/?uid=%E2%80%AEevil+key")
    page.get_by_role("button", name="Forget").click()
    page.get_by_role("status").wait_for()

    uid = page.evaluate(LEFT_OF, [".messages li", "evil"])
    rest = page.evaluate(LEFT_OF, [".messages li", "history"])
    assert uid < rest
