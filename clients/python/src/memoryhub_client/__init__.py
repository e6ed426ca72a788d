"""memoryhub-client: MemoryHub's API from Python, blocking (MemoryHub) or asyncio (AsyncMemoryHub).

    from memoryhub_client import MemoryHub

    with MemoryHub("http://127.0.0.1:8000", token="...") as hub:
        hub.put("alice", "language", "prefers Python")
        for entry in hub.entries("alice"):
            print(entry.key, entry.value)

HubBackend serves the agent-side memory module's Backend protocol from a hub.
"""

from memoryhub_client.aio import AsyncMemoryHub
from memoryhub_client.backend import BackendEntry, HubBackend
from memoryhub_client.client import MemoryHub
from memoryhub_client.errors import (
    APIError,
    AuthenticationError,
    BadRequest,
    Conflict,
    HubConnectionError,
    HubTimeout,
    InvalidArgument,
    MemoryHubError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ServerError,
    WriteHeld,
)
from memoryhub_client.models import (
    BatchOperation,
    BatchOutcome,
    Context,
    ContextEntry,
    Entry,
    EvaluationRun,
    Event,
    HeldWrite,
    Info,
    SyncStatus,
    UserSummary,
)
from memoryhub_client.pagination import AsyncPage, Page

__all__ = [
    "APIError",
    "AsyncMemoryHub",
    "AsyncPage",
    "AuthenticationError",
    "BackendEntry",
    "BadRequest",
    "BatchOperation",
    "BatchOutcome",
    "Conflict",
    "Context",
    "ContextEntry",
    "Entry",
    "EvaluationRun",
    "Event",
    "HeldWrite",
    "HubBackend",
    "HubConnectionError",
    "HubTimeout",
    "Info",
    "InvalidArgument",
    "MemoryHub",
    "MemoryHubError",
    "NotFound",
    "Page",
    "PayloadTooLarge",
    "PermissionDenied",
    "PreconditionFailed",
    "RateLimited",
    "ServerError",
    "SyncStatus",
    "UserSummary",
    "WriteHeld",
]
