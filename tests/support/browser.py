"""Driving Debian's Chromium with Playwright: the browser's options, the screen sizes, a tab, a login."""

from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page, ViewportSize

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


def open_page(browser: Browser, base_url: str, viewport: ViewportSize) -> Page:
    context = browser.new_context(base_url=base_url, viewport=viewport)
    context.set_default_timeout(10_000)
    return context.new_page()


def log_in(page: Page, account: User, password: str) -> None:
    """Log in through the login form, as a person would."""
    page.goto("/login/")
    page.get_by_label("Username").fill(account.get_username())
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
