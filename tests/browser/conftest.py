"""Real-browser fixtures: Debian's Chromium, headless, driven by Playwright against pytest-django's live server.

The browser is the system's /usr/bin/chromium (`make test` installs it when missing); Playwright's
own browser downloads are never used.

Why DJANGO_ALLOW_ASYNC_UNSAFE: Playwright's sync API keeps an asyncio event loop registered as
running in the test's thread while the browser is open. Django sees that loop and refuses ORM
calls from the same thread (SynchronousOnlyOperation), although those calls (creating accounts,
checking the database after a click) are ordinary blocking calls that never run inside the loop.
The variable turns off that one check, and only while this folder's browser is open: it is set
and removed with the module-scoped browser, so every other test keeps Django's guard.
"""

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright

CHROMIUM = "/usr/bin/chromium"
# No sandbox (tests run as root in CI), no GPU, and nothing that reaches past 127.0.0.1.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


def open_page(browser: Browser, base_url: str, viewport: ViewportSize) -> Page:
    context = browser.new_context(base_url=base_url, viewport=viewport)
    context.set_default_timeout(10_000)
    return context.new_page()


@pytest.fixture
def page(browser: Browser, live_server) -> Iterator[Page]:
    """A fresh desktop-sized tab (its own cookies) on the live server."""
    tab = open_page(browser, live_server.url, DESKTOP)
    yield tab
    tab.context.close()


def log_in(page: Page, account: User, password: str) -> None:
    """Log in through the login form, as a person would."""
    page.goto("/login/")
    page.get_by_label("Username").fill(account.get_username())
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
