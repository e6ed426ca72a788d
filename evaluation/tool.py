"""The tool's evaluate action, listed in settings.MEMORYHUB_TOOL_ACTIONS (memories never imports evaluation)."""

from typing import Any

from django.contrib.auth.models import User

from evaluation.services import tool_evaluate


def action_evaluate(account: User, uid: str, args: dict[str, Any]) -> dict[str, Any]:
    """{"ok": true, "results": [...], "recommendation": ...}, as the agent-side tool answers (evaluation.services)."""
    return {"ok": True, **tool_evaluate(account)}
