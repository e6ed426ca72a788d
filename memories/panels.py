"""The overview's sync panel, registered in settings.MEMORYHUB_OVERVIEW_PANELS."""

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest

from memories import selectors
from memories.work import work_status


def sync_status_panel(request: HttpRequest, owner: User) -> dict[str, Any] | None:
    """The account's Honcho sync status (two queries) when sync is on; nothing, and no query, when off."""
    if not settings.MEMORYHUB_HONCHO_SYNC:
        return None
    return {"template": "memories/_sync_panel.html", "status": selectors.sync_status(owner=owner)}


def work_panel(request: HttpRequest, owner: User) -> dict[str, Any]:
    """Whether a worker (`manage.py work`) was seen in the last minute, and the work waiting (one query)."""
    return {"template": "memories/_work_panel.html", "work": work_status()}
