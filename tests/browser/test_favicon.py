"""The dashboard and the admin name the hub's icon, which the hub serves, so a browser does not ask for
/favicon.ico: no 404 in its console and no "Not Found: /favicon.ico" in the server's log at each visit."""

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_a_page_names_an_icon_the_hub_serves(page: Page, db, path) -> None:
    page.goto(path)

    icons = page.locator("link[rel=icon]")
    assert icons.count() == 1
    href = icons.get_attribute("href")
    assert href is not None
    icon = page.request.get(href)
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
