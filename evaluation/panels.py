"""The overview's "latest evaluation" panel, registered in settings.MEMORYHUB_OVERVIEW_PANELS
(memories never imports evaluation; the overview calls the dotted paths that setting lists)."""

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest

from evaluation import selectors
from evaluation.scoring import recommended


def latest_evaluation_panel(request: HttpRequest, owner: User) -> dict[str, Any]:
    """The newest run's grades and the backend it recommends (one query), or how to run a first one.

    Runs are hub-wide, so owner (whose memories the overview shows) does not change the panel.
    """
    results = selectors.latest_run_results()
    return {
        "template": "evaluation/_overview_panel.html",
        "run": results[0].run if results else None,
        "results": results,
        "best": recommended(results),
    }
