"""The memory_backend tool: the actions an agent calls, with the replies it already knows.

Replies and error strings are those of the agent-side tool the hub grows from, so an agent that
used it can point at POST /api/v1/tool unchanged. Every write goes through memories.services and
every read through memories.selectors, scoped to the calling account.
"""

import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils.module_loading import import_string

from memories import selectors, services
from memories.backends import hub_status
from memories.context import CONTEXT_QUERY_MAX_LENGTH
from memories.filters import filter_from_arguments
from memories.models import Privacy
from memories.validation import EXPIRY_MAX_SECONDS, InvalidField, check_key, check_uid

# The actions, from settings.MEMORYHUB_TOOL_ACTIONS (each name with the dotted path of its handler),
# as the overview's panels are: memories never imports the apps that add actions (evaluate is
# evaluation's). Handlers take (account, uid, arguments) and return the reply.
ACTIONS = tuple(settings.MEMORYHUB_TOOL_ACTIONS)

TOOL_SCHEMA: dict[str, Any] = {
    "name": "memory_backend",
    "description": (
        "Cross-session memory backends. Local SQLite default, Honcho cloud opt-in. Zero overhead when disabled."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "uid": {"type": "string"},
            "key": {"type": "string"},
            "value": {"type": "string"},
            "query": {"type": "string"},
            "privacy": {
                "type": "string",
                "enum": list(Privacy.values),
                "description": "store only: local keeps the memory on this hub (never synced or sent to a remote "
                "embeddings endpoint); shared (or the account's default when left out) may be.",
            },
            "meta": {
                "type": "object",
                "description": "store: the memory's extra data. query: only memories whose meta has each of these "
                "top-level fields equal to the value given (or to one of the values of a list).",
            },
            "kind": {
                "type": ["string", "array"],
                "items": {"type": "string"},
                "description": "query: only memories of this kind (or of one of these kinds).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": settings.MEMORYHUB_MAX_PAGE_SIZE,
                "description": f"query: the most results to return (default {settings.MEMORYHUB_QUERY_LIMIT}).",
            },
            "ttl": {
                "type": "integer",
                "minimum": 1,
                "maximum": EXPIRY_MAX_SECONDS,
                "description": "store: seconds until the memory expires (then no read shows it); left out, never.",
            },
        },
        "required": ["action"],
    },
}

Reply = dict[str, Any]

Action = Callable[[User, str, dict[str, Any]], Reply]


def _storable(text: str) -> bool:
    """Whether text can reach the database at all (UTF-8 has no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(name: object) -> str:
    """A name as given, a lone surrogate written as its escape (a reply is UTF-8)."""
    return str(name).encode("utf-8", "backslashreplace").decode("utf-8")


def _error(message: str) -> Reply:
    return {"ok": False, "error": message}


def action_store(account: User, uid: str, args: dict[str, Any]) -> Reply:
    key, value, meta = args.get("key"), args.get("value"), args.get("meta")
    if not key or value is None:
        return _error("key+value required")
    if meta is not None and not isinstance(meta, dict):
        return {"ok": False, "key": key, "error": "meta: must be a JSON object."}
    # The agent-side tool sets an entry's kind from meta["type"]; without one, the kind is kept.
    kind = meta.get("type") if meta else None
    privacy = args.get("privacy")
    try:
        services.entry_put(
            owner=account, uid=uid, key=key, value=value, kind=kind, meta=meta, privacy=privacy, ttl=args.get("ttl")
        )
    except InvalidField as error:
        return {"ok": False, "key": key, "error": str(error)}
    except services.WriteHeld as held:
        # Accepted, not stored: the write guard keeps it for staff to approve (GET /api/v1/held/ID).
        return {"ok": True, "key": key, "held": held.held.pk, "guard_flags": held.held.guard_flag_names}
    return {"ok": True, "key": key}


def action_get(account: User, uid: str, args: dict[str, Any]) -> Reply:
    key = args.get("key")
    if not key:
        return _error("key required")
    if not isinstance(key, str):
        return _error("key must be a string")
    entry = selectors.entry_get(owner=account, uid=uid, key=key)
    if entry is None:
        return _error("not found")
    return {"ok": True, "key": entry.key, "value": entry.value, "type": entry.kind}


def _check_limit(limit: object) -> int:
    """query's limit: 1 to MEMORYHUB_MAX_PAGE_SIZE (as MCP's recall takes it); left out, MEMORYHUB_QUERY_LIMIT."""
    if limit is None:
        return settings.MEMORYHUB_QUERY_LIMIT
    most = settings.MEMORYHUB_MAX_PAGE_SIZE
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidField("limit", f"must be a whole number from 1 to {most}.")
    if not 1 <= limit <= most:
        raise InvalidField("limit", f"must be a whole number from 1 to {most}; got {limit}.")
    return limit


def action_query(account: User, uid: str, args: dict[str, Any]) -> Reply:
    query_text = args.get("query")
    if not query_text:
        return _error("query required")
    if not isinstance(query_text, str):
        return _error("query: must be a string.")
    if "\x00" in query_text or not _storable(query_text):
        return _error("query: must not contain NUL characters or unpaired surrogates.")
    if len(query_text) > CONTEXT_QUERY_MAX_LENGTH:
        return _error(f"query: must be at most {CONTEXT_QUERY_MAX_LENGTH} characters; got {len(query_text)}.")
    try:
        limit = _check_limit(args.get("limit"))
        filters = filter_from_arguments(kind=args.get("kind"), meta=args.get("meta"))
    except InvalidField as error:
        return _error(str(error))
    found = selectors.entry_find(owner=account, uid=uid, query_text=query_text, filters=filters)[:limit]
    results = [{"key": entry.key, "value": entry.value} for entry in found]
    return {"ok": True, "results": results, "count": len(results)}


def action_list(account: User, uid: str, args: dict[str, Any]) -> Reply:
    entries = [
        {"key": key, "type": kind}
        for key, kind in selectors.entry_list(owner=account, uid=uid).values_list("key", "kind")
    ]
    return {"ok": True, "entries": entries, "count": len(entries)}


def action_delete(account: User, uid: str, args: dict[str, Any]) -> Reply:
    key = args.get("key")
    if not key:
        return _error("key required")
    if not isinstance(key, str):
        return _error("key must be a string")
    services.entry_delete(owner=account, uid=uid, key=key)
    # Deleting what is not there succeeds, as it always has for agents.
    return {"ok": True}


def action_info(account: User, uid: str, args: dict[str, Any]) -> Reply:
    status = hub_status()
    return {"ok": True, "backend": status.backend, "cloud": status.cloud, "available": status.available}


@functools.cache
def _handlers(actions: tuple[tuple[str, str], ...]) -> dict[str, Action]:
    return {name: import_string(path) for name, path in actions}


def tool_actions() -> dict[str, Action]:
    """Each action's handler, imported from settings.MEMORYHUB_TOOL_ACTIONS on first use."""
    return _handlers(tuple(settings.MEMORYHUB_TOOL_ACTIONS.items()))


def run_tool(*, account: User, arguments: dict[str, Any]) -> Reply:
    """Run one tool call for account and return its JSON reply (never raises on bad arguments)."""
    action = arguments.get("action")
    if action is None or action == "":
        return _error(f"action required: one of {', '.join(tool_actions())}")
    handler = tool_actions().get(action) if isinstance(action, str) else None
    if handler is None:
        return _error(f"unknown: {_shown(action)}")
    taken = TOOL_SCHEMA["parameters"]["properties"]
    unknown = [name for name in arguments if name not in taken]
    if unknown:
        # Left unread, a misspelt "privacy" would share the memory, an "expected_version" overwrite a newer one.
        return _error(f"{_shown(unknown[0])}: is no argument of memory_backend; it takes {', '.join(taken)}.")
    uid = arguments.get("uid", "default")
    try:
        check_uid(uid)
        if isinstance(arguments.get("key"), str) and arguments["key"]:
            check_key(arguments["key"])
    except InvalidField as error:
        return _error(str(error))
    return handler(account, uid, arguments)
