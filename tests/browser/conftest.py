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
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, DESKTOP, open_page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


@pytest.fixture
def page(browser: Browser, live_server) -> Iterator[Page]:
    """A fresh desktop-sized tab (its own cookies) on the live server."""
    tab = open_page(browser, live_server.url, DESKTOP)
    yield tab
    tab.context.close()
