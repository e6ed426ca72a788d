"""The double's state and routes: what a Honcho 3.0 server answers, for the routes the hub uses.

`HonchoState.handle(method, path, query, body)` returns a `Reply` (status and JSON body). It is
pure bookkeeping, with no I/O, so the in-process transport and the HTTP server share it.
"""

import math
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
ID_MAX_LENGTH = 512
MESSAGE_MAX_CHARS = 25_000
MESSAGES_PER_BATCH = 100
METADATA_MAX_DEPTH = 5
PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 100
SEARCH_LIMIT_MAX = 100
FILTER_OPERATORS = {"ne", "in", "gt", "gte", "lt", "lte", "contains", "icontains"}
NANOID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Reply:
    status: int
    body: object


class ApiError(Exception):
    """Answer with this status and body instead of the route's normal reply."""

    def __init__(self, status: int, body: object) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def _not_found(detail: str) -> ApiError:
    return ApiError(404, {"detail": detail})


def _invalid(location: list[str | int], message: str, value: object, error_type: str = "value_error") -> ApiError:
    """FastAPI's 422 shape, as Honcho answers it."""
    return ApiError(422, {"detail": [{"type": error_type, "loc": location, "msg": message, "input": value}]})


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _nanoid() -> str:
    return "".join(secrets.choice(NANOID_ALPHABET) for _ in range(21))


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(child) for child in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(child) for child in value), default=0)
    return 0


@dataclass
class Session:
    id: str
    workspace_id: str
    metadata: dict[str, Any]
    configuration: dict[str, Any]
    created_at: str
    peers: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    is_active: bool = True

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "is_active": self.is_active,
            "workspace_id": self.workspace_id,
            "metadata": self.metadata,
            "configuration": self.configuration,
            "created_at": self.created_at,
        }


@dataclass
class Workspace:
    id: str
    created_at: str
    metadata: dict[str, Any] = field(default_factory=dict)
    configuration: dict[str, Any] = field(default_factory=dict)
    peers: dict[str, dict[str, Any]] = field(default_factory=dict)
    peer_cards: dict[str, list[str]] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    # Deleted sessions answer 404 until Honcho's worker purges them (see HonchoState.purge).
    deleting: dict[str, Session] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "metadata": self.metadata,
            "configuration": self.configuration,
            "created_at": self.created_at,
        }


# Filters ---------------------------------------------------------------------------------------


def _compare(actual: object, condition: object) -> bool:
    """One field's condition: a plain value (equality) or a dict of operators."""
    if isinstance(condition, dict) and condition and set(condition) <= FILTER_OPERATORS:
        return all(_apply_operator(actual, operator, operand) for operator, operand in condition.items())
    if condition == "*":
        return actual is not None
    return actual == condition


# Any: JSON values compared the way Honcho compares them; a TypeError means no match.
def _apply_operator(actual: Any, operator: str, operand: Any) -> bool:  # noqa: ANN401
    if operator == "ne":
        return actual != operand
    if operator == "in":
        return isinstance(operand, list) and actual in operand
    if operator == "contains":
        return isinstance(actual, (str, list)) and operand in actual
    if operator == "icontains":
        return isinstance(actual, str) and isinstance(operand, str) and operand.lower() in actual.lower()
    if actual is None:
        return False
    try:
        if operator == "gt":
            return actual > operand
        if operator == "gte":
            return actual >= operand
        if operator == "lt":
            return actual < operand
        if operator == "lte":
            return actual <= operand
    except TypeError:
        return False
    return False


def _metadata_matches(metadata: dict[str, Any], wanted: object) -> bool:
    """Containment: every field named in `wanted` holds (or satisfies) the given value."""
    if not isinstance(wanted, dict):
        return False
    for name, condition in wanted.items():
        actual = metadata.get(name)
        if isinstance(condition, dict) and condition and not set(condition) <= FILTER_OPERATORS:
            if not isinstance(actual, dict) or not _metadata_matches(actual, condition):
                return False
        elif not _compare(actual, condition):
            return False
    return True


def matches(record: dict[str, Any], filters: dict[str, Any] | None) -> bool:
    """Whether a record (a session's or message's JSON) passes Honcho's filter language."""
    if not filters:
        return True
    for name, condition in filters.items():
        if name == "AND":
            if not all(matches(record, part) for part in condition):
                return False
        elif name == "OR":
            if condition and not any(matches(record, part) for part in condition):
                return False
        elif name == "NOT":
            if any(matches(record, part) for part in condition):
                return False
        elif name == "metadata":
            if not _metadata_matches(record.get("metadata") or {}, condition):
                return False
        elif not _compare(record.get(name), condition):
            return False
    return True


def _check_filters(filters: object) -> dict[str, Any] | None:
    if filters is None:
        return None
    if not isinstance(filters, dict):
        raise _invalid(["body", "filters"], "Input should be a valid dictionary", filters, "dict_type")
    for operator in ("AND", "OR", "NOT"):
        if operator in filters and not isinstance(filters[operator], list):
            raise _invalid(
                ["body", "filters", operator], "Input should be a valid list", filters[operator], "list_type"
            )
    return filters


# Pages -----------------------------------------------------------------------------------------


def _page_parameters(query: dict[str, str]) -> tuple[int, int, bool]:
    try:
        page = int(query.get("page", 1))
    except ValueError:
        raise _invalid(["query", "page"], "Input should be a valid integer", query.get("page"), "int_parsing") from None
    try:
        size = int(query.get("size", PAGE_SIZE_DEFAULT))
    except ValueError:
        raise _invalid(["query", "size"], "Input should be a valid integer", query.get("size"), "int_parsing") from None
    if page < 1:
        raise _invalid(
            ["query", "page"], "Input should be greater than or equal to 1", query.get("page"), "greater_than_equal"
        )
    if not 1 <= size <= PAGE_SIZE_MAX:
        kind = "less_than_equal" if size > PAGE_SIZE_MAX else "greater_than_equal"
        bound = f"less than or equal to {PAGE_SIZE_MAX}" if size > PAGE_SIZE_MAX else "greater than or equal to 1"
        raise _invalid(["query", "size"], f"Input should be {bound}", query.get("size"), kind)
    reverse = str(query.get("reverse", "false")).lower() in ("true", "1", "yes", "on")
    return page, size, reverse


def _page(items: list[dict[str, Any]], query: dict[str, str]) -> dict[str, Any]:
    page, size, reverse = _page_parameters(query)
    if reverse:
        items = list(reversed(items))
    start = (page - 1) * size
    return {
        "items": items[start : start + size],
        "total": len(items),
        "page": page,
        "size": size,
        "pages": math.ceil(len(items) / size),
    }


# Bodies ----------------------------------------------------------------------------------------


def _body_object(body: object, *, required: bool = True) -> dict[str, Any]:
    if body is None and not required:
        return {}
    if not isinstance(body, dict):
        raise _invalid(
            ["body"],
            "Input should be a valid dictionary or object to extract fields from",
            body,
            "model_attributes_type",
        )
    return body


def _check_id(body: dict[str, Any]) -> str:
    if "id" not in body:
        raise _invalid(["body", "id"], "Field required", body, "missing")
    resource_id = body["id"]
    if not isinstance(resource_id, str):
        raise _invalid(["body", "id"], "Input should be a valid string", resource_id, "string_type")
    if not 1 <= len(resource_id) <= ID_MAX_LENGTH:
        raise _invalid(
            ["body", "id"], f"String should have at most {ID_MAX_LENGTH} characters", resource_id, "string_too_long"
        )
    if not ID_PATTERN.match(resource_id):
        raise _invalid(
            ["body", "id"], "String should match pattern '^[a-zA-Z0-9_-]+$'", resource_id, "string_pattern_mismatch"
        )
    return resource_id


def _check_metadata(metadata: object, location: list[str | int]) -> dict[str, Any] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise _invalid(location, "Input should be a valid dictionary", metadata, "dict_type")
    if _depth(metadata) > METADATA_MAX_DEPTH:
        raise _invalid(
            location, f"Value error, Metadata nesting depth exceeds maximum of {METADATA_MAX_DEPTH}", metadata
        )
    return metadata


# The state -------------------------------------------------------------------------------------

Route = tuple[str, re.Pattern[str], str]

SEGMENT = r"([^/]+)"
W = rf"/v3/workspaces/{SEGMENT}"
ROUTES: list[Route] = [
    ("GET", re.compile(r"^/health$"), "health"),
    ("POST", re.compile(r"^/v3/workspaces$"), "workspace_get_or_create"),
    ("PUT", re.compile(rf"^{W}$"), "workspace_update"),
    ("GET", re.compile(rf"^{W}/queue/status$"), "queue_status"),
    ("POST", re.compile(rf"^{W}/search$"), "workspace_search"),
    ("POST", re.compile(rf"^{W}/peers/list$"), "peer_list"),
    ("POST", re.compile(rf"^{W}/peers$"), "peer_get_or_create"),
    ("PUT", re.compile(rf"^{W}/peers/{SEGMENT}$"), "peer_update"),
    ("GET", re.compile(rf"^{W}/peers/{SEGMENT}/card$"), "peer_card_get"),
    ("PUT", re.compile(rf"^{W}/peers/{SEGMENT}/card$"), "peer_card_set"),
    ("POST", re.compile(rf"^{W}/peers/{SEGMENT}/search$"), "peer_search"),
    ("POST", re.compile(rf"^{W}/peers/{SEGMENT}/sessions$"), "peer_sessions"),
    ("POST", re.compile(rf"^{W}/sessions/list$"), "session_list"),
    ("POST", re.compile(rf"^{W}/sessions$"), "session_get_or_create"),
    ("PUT", re.compile(rf"^{W}/sessions/{SEGMENT}$"), "session_update"),
    ("DELETE", re.compile(rf"^{W}/sessions/{SEGMENT}$"), "session_delete"),
    ("GET", re.compile(rf"^{W}/sessions/{SEGMENT}/peers$"), "session_peers"),
    ("POST", re.compile(rf"^{W}/sessions/{SEGMENT}/peers$"), "session_peers_add"),
    ("POST", re.compile(rf"^{W}/sessions/{SEGMENT}/messages$"), "message_create"),
    ("POST", re.compile(rf"^{W}/sessions/{SEGMENT}/messages/list$"), "message_list"),
    ("GET", re.compile(rf"^{W}/sessions/{SEGMENT}/messages/{SEGMENT}$"), "message_get"),
]


class HonchoState:
    """Every workspace, peer, session and message the double holds. Thread-safe."""

    def __init__(self) -> None:
        self.workspaces: dict[str, Workspace] = {}
        self._lock = threading.RLock()

    # The public surface for tests ---------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, str], body: object) -> Reply:
        """Answer one request as Honcho would."""
        matched_path = False
        for route_method, pattern, name in ROUTES:
            found = pattern.match(path)
            if not found:
                continue
            matched_path = True
            if route_method != method:
                continue
            with self._lock:
                try:
                    return getattr(self, f"_{name}")(*found.groups(), query=query, body=body)
                except ApiError as error:
                    return Reply(error.status, error.body)
        if matched_path:
            return Reply(405, {"detail": "Method Not Allowed"})
        return Reply(404, {"detail": "Not Found"})

    def purge(self) -> int:
        """Finish deleting what DELETE accepted (Honcho's background worker); returns how many went."""
        with self._lock:
            purged = 0
            for workspace in self.workspaces.values():
                purged += len(workspace.deleting)
                workspace.deleting.clear()
            return purged

    def sessions(self, workspace_id: str) -> list[Session]:
        """The live sessions of a workspace, oldest first."""
        with self._lock:
            workspace = self.workspaces.get(workspace_id)
            return list(workspace.sessions.values()) if workspace else []

    # Helpers ------------------------------------------------------------------------------

    def _workspace(self, workspace_id: str) -> Workspace:
        workspace = self.workspaces.get(workspace_id)
        if workspace is None:
            raise _not_found(f"Workspace {workspace_id} not found")
        return workspace

    def _session(self, workspace: Workspace, session_id: str) -> Session:
        session = workspace.sessions.get(session_id)
        if session is None:
            raise _not_found(f"Session {session_id} not found in workspace {workspace.id}")
        return session

    def _peer(self, workspace: Workspace, peer_id: str) -> dict[str, Any]:
        peer = workspace.peers.get(peer_id)
        if peer is None:
            raise _not_found(f"Peer {peer_id} not found in workspace {workspace.id}")
        return peer

    def _ensure_peer(self, workspace: Workspace, peer_id: str) -> tuple[dict[str, Any], bool]:
        if peer_id in workspace.peers:
            return workspace.peers[peer_id], False
        peer = {"id": peer_id, "workspace_id": workspace.id, "created_at": _now(), "metadata": {}, "configuration": {}}
        workspace.peers[peer_id] = peer
        return peer, True

    # Routes -------------------------------------------------------------------------------

    def _health(self, *, query: dict[str, str], body: object) -> Reply:
        return Reply(200, {"status": "ok"})

    def _workspace_get_or_create(self, *, query: dict[str, str], body: object) -> Reply:
        body = _body_object(body)
        workspace_id = _check_id(body)
        metadata = _check_metadata(body.get("metadata"), ["body", "metadata"])
        workspace = self.workspaces.get(workspace_id)
        if workspace is not None:
            return Reply(200, workspace.as_json())
        workspace = Workspace(id=workspace_id, created_at=_now(), metadata=metadata or {})
        self.workspaces[workspace_id] = workspace
        return Reply(201, workspace.as_json())

    def _workspace_update(self, workspace_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        body = _body_object(body)
        metadata = _check_metadata(body.get("metadata"), ["body", "metadata"])
        if metadata is not None:
            workspace.metadata = metadata
        if isinstance(body.get("configuration"), dict):
            workspace.configuration = body["configuration"]
        return Reply(200, workspace.as_json())

    def _queue_status(self, workspace_id: str, *, query: dict[str, str], body: object) -> Reply:
        self._workspace(workspace_id)
        return Reply(
            200,
            {
                "total_work_units": 0,
                "completed_work_units": 0,
                "in_progress_work_units": 0,
                "pending_work_units": 0,
                "sessions": None,
            },
        )

    def _peer_list(self, workspace_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        filters = _check_filters(_body_object(body, required=False).get("filters"))
        return Reply(200, _page([peer for peer in workspace.peers.values() if matches(peer, filters)], query))

    def _peer_get_or_create(self, workspace_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        body = _body_object(body)
        peer_id = _check_id(body)
        metadata = _check_metadata(body.get("metadata"), ["body", "metadata"])
        peer, created = self._ensure_peer(workspace, peer_id)
        if metadata is not None:
            peer["metadata"] = metadata
        if isinstance(body.get("configuration"), dict):
            peer["configuration"] = body["configuration"]
        return Reply(201 if created else 200, peer)

    def _peer_update(self, workspace_id: str, peer_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        peer = self._peer(workspace, peer_id)
        body = _body_object(body)
        metadata = _check_metadata(body.get("metadata"), ["body", "metadata"])
        if metadata is not None:
            peer["metadata"] = metadata
        if isinstance(body.get("configuration"), dict):
            peer["configuration"] = body["configuration"]
        return Reply(200, peer)

    def _peer_card_get(self, workspace_id: str, peer_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        self._peer(workspace, peer_id)
        return Reply(200, {"peer_card": workspace.peer_cards.get(peer_id)})

    def _peer_card_set(self, workspace_id: str, peer_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        self._peer(workspace, peer_id)
        card = _body_object(body).get("peer_card")
        if not isinstance(card, list) or not all(isinstance(line, str) for line in card):
            raise _invalid(["body", "peer_card"], "Input should be a valid list", card, "list_type")
        workspace.peer_cards[peer_id] = card
        return Reply(200, {"peer_card": card})

    def _search(self, messages: list[dict[str, Any]], body: object) -> Reply:
        body = _body_object(body)
        query_text = body.get("query")
        if not isinstance(query_text, str):
            raise _invalid(["body", "query"], "Field required", body, "missing")
        limit = body.get("limit", 10)
        if not isinstance(limit, int) or not 1 <= limit <= SEARCH_LIMIT_MAX:
            raise _invalid(
                ["body", "limit"], f"Input should be between 1 and {SEARCH_LIMIT_MAX}", limit, "less_than_equal"
            )
        filters = _check_filters(body.get("filters"))
        words = [word for word in query_text.lower().split() if word]
        found = [
            message
            for message in messages
            if all(word in message["content"].lower() for word in words) and matches(message, filters)
        ]
        return Reply(200, found[:limit])

    def _workspace_search(self, workspace_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        messages = [message for session in workspace.sessions.values() for message in session.messages]
        return self._search(messages, body)

    def _peer_search(self, workspace_id: str, peer_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        self._peer(workspace, peer_id)
        messages = [
            message
            for session in workspace.sessions.values()
            for message in session.messages
            if message["peer_id"] == peer_id
        ]
        return self._search(messages, body)

    def _peer_sessions(self, workspace_id: str, peer_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        self._peer(workspace, peer_id)
        filters = _check_filters(_body_object(body, required=False).get("filters"))
        sessions = [
            session.as_json()
            for session in workspace.sessions.values()
            if peer_id in session.peers and matches(session.as_json(), filters)
        ]
        return Reply(200, _page(sessions, query))

    def _session_list(self, workspace_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        filters = _check_filters(_body_object(body, required=False).get("filters"))
        sessions = [session.as_json() for session in workspace.sessions.values() if matches(session.as_json(), filters)]
        return Reply(200, _page(sessions, query))

    def _session_get_or_create(self, workspace_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        body = _body_object(body)
        session_id = _check_id(body)
        metadata = _check_metadata(body.get("metadata"), ["body", "metadata"])
        peers = body.get("peers") or {}
        if not isinstance(peers, dict):
            raise _invalid(["body", "peers"], "Input should be a valid dictionary", peers, "dict_type")
        if session_id in workspace.deleting:
            raise _not_found(f"Session {session_id} not found in workspace {workspace.id}")
        session = workspace.sessions.get(session_id)
        created = session is None
        if session is None:
            session = Session(
                id=session_id,
                workspace_id=workspace.id,
                metadata=metadata or {},
                configuration=body.get("configuration") or {},
                created_at=_now(),
            )
            workspace.sessions[session_id] = session
        elif metadata is not None:
            session.metadata = metadata
        for peer_id, config in peers.items():
            self._ensure_peer(workspace, peer_id)
            session.peers[peer_id] = config or {}
        return Reply(201 if created else 200, session.as_json())

    def _session_update(self, workspace_id: str, session_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        session = self._session(workspace, session_id)
        body = _body_object(body)
        metadata = _check_metadata(body.get("metadata"), ["body", "metadata"])
        if metadata is not None:
            session.metadata = metadata
        if isinstance(body.get("configuration"), dict):
            session.configuration = body["configuration"]
        return Reply(200, session.as_json())

    def _session_delete(self, workspace_id: str, session_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        session = self._session(workspace, session_id)
        session.is_active = False
        workspace.deleting[session_id] = workspace.sessions.pop(session_id)
        return Reply(202, {"message": "Session deleted successfully"})

    def _session_peers(self, workspace_id: str, session_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        session = self._session(workspace, session_id)
        return Reply(200, _page([workspace.peers[peer_id] for peer_id in session.peers], query))

    def _session_peers_add(self, workspace_id: str, session_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        session = self._session(workspace, session_id)
        for peer_id, config in _body_object(body).items():
            self._ensure_peer(workspace, peer_id)
            session.peers[peer_id] = config or {}
        return Reply(200, session.as_json())

    def _message_create(self, workspace_id: str, session_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        session = self._session(workspace, session_id)
        batch = _body_object(body).get("messages")
        if not isinstance(batch, list):
            raise _invalid(["body", "messages"], "Field required", body, "missing")
        if not 1 <= len(batch) <= MESSAGES_PER_BATCH:
            raise _invalid(
                ["body", "messages"],
                f"List should have at least 1 item and at most {MESSAGES_PER_BATCH}",
                batch,
                "too_long",
            )
        for index, message in enumerate(batch):
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                raise _invalid(["body", "messages", index, "content"], "Field required", message, "missing")
            if not isinstance(message.get("peer_id"), str):
                raise _invalid(["body", "messages", index, "peer_id"], "Field required", message, "missing")
            if len(message["content"]) > MESSAGE_MAX_CHARS:
                raise _invalid(
                    ["body", "messages", index, "content"],
                    f"String should have at most {MESSAGE_MAX_CHARS} characters",
                    message["content"],
                    "string_too_long",
                )
            _check_metadata(message.get("metadata"), ["body", "messages", index, "metadata"])
        created = []
        for message in batch:
            self._ensure_peer(workspace, message["peer_id"])
            session.peers.setdefault(message["peer_id"], {})
            stored = {
                "id": _nanoid(),
                "content": message["content"],
                "peer_id": message["peer_id"],
                "session_id": session.id,
                "metadata": message.get("metadata") or {},
                "created_at": message.get("created_at") or _now(),
                "workspace_id": workspace.id,
                "token_count": len(TOKEN_PATTERN.findall(message["content"])),
            }
            session.messages.append(stored)
            created.append(stored)
        return Reply(201, created)

    def _message_list(self, workspace_id: str, session_id: str, *, query: dict[str, str], body: object) -> Reply:
        workspace = self._workspace(workspace_id)
        session = self._session(workspace, session_id)
        filters = _check_filters(_body_object(body, required=False).get("filters"))
        return Reply(200, _page([message for message in session.messages if matches(message, filters)], query))

    def _message_get(
        self, workspace_id: str, session_id: str, message_id: str, *, query: dict[str, str], body: object
    ) -> Reply:
        workspace = self._workspace(workspace_id)
        session = self._session(workspace, session_id)
        for message in session.messages:
            if message["id"] == message_id:
                return Reply(200, message)
        raise _not_found(f"Message with ID {message_id} not found")
