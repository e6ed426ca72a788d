"""Where entries can live: the registry of backends, and which one the hub reports as in use.

Backends are imported by name, lazily, so the Honcho SDK is loaded only when Honcho is used.
The choice follows MEMORYHUB_BACKEND: local, honcho or null as named; auto (the default) means
Honcho when HONCHO_API_KEY is set and Honcho answers, else local.
"""

import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils.module_loading import import_string

from memories.backends.base import Availability, BackendError, MemoryBackend

__all__ = [
    "BACKENDS",
    "BackendError",
    "HubStatus",
    "MemoryBackend",
    "UnknownBackend",
    "backend_class",
    "forget_honcho_probe",
    "hub_status",
    "make_backend",
]

BACKENDS: dict[str, str] = {
    "null": "memories.backends.null.NullBackend",
    "local": "memories.backends.local.LocalBackend",
    "honcho": "memories.backends.honcho.HonchoBackend",
}
# How long one answer from Honcho about whether it is up is reused (so /info is not a round trip each time).
HONCHO_PROBE_SECONDS = 30.0


class UnknownBackend(LookupError):
    """No backend has that name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown backend {name!r}: choose from {', '.join(BACKENDS)}")
        self.name = name


def backend_class(name: str) -> type[MemoryBackend]:
    """The backend class registered under name; raises UnknownBackend."""
    try:
        path = BACKENDS[name]
    except KeyError:
        raise UnknownBackend(name) from None
    return import_string(path)


def make_backend(name: str, *, owner: User, **options: Any) -> MemoryBackend:
    """A backend bound to owner's entries (options go to its constructor: Honcho's max_retries, ...)."""
    return backend_class(name)(owner=owner, **options)


@dataclass(frozen=True)
class HubStatus:
    backend: str
    cloud: bool
    available: bool
    reason: str


_probe_lock = threading.Lock()
_probes: dict[tuple[str, str, str], tuple[float, Availability, bool]] = {}


def forget_honcho_probe() -> None:
    """Drop the remembered answers from Honcho, so the next status asks again."""
    with _probe_lock:
        _probes.clear()


def _honcho_probe() -> tuple[Availability, bool]:
    """Whether the configured Honcho answers (one round trip, remembered briefly), and whether it is a cloud."""
    from memories.backends.honcho import HonchoStore
    from memories.backends.honcho_config import HonchoConfig

    config = HonchoConfig.from_settings()
    if not config.configured:
        return Availability(
            ok=False, reason="Honcho is not configured: set HONCHO_URL or HONCHO_API_KEY"
        ), config.is_cloud
    cache_key = (config.base_url, config.api_key, config.workspace_id)
    with _probe_lock:
        remembered = _probes.get(cache_key)
    if remembered is not None and time.monotonic() - remembered[0] < HONCHO_PROBE_SECONDS:
        return remembered[1], remembered[2]
    store = HonchoStore(config, max_retries=0)
    try:
        store.ping()
        availability = Availability(ok=True, reason=f"Honcho at {config.base_url} answers")
    except BackendError as error:
        availability = Availability(ok=False, reason=error.message)
    finally:
        store.close()
    with _probe_lock:
        _probes[cache_key] = (time.monotonic(), availability, config.is_cloud)
    return availability, config.is_cloud


def _local_status(reason: str) -> HubStatus:
    from memories.backends.local import database_availability

    database = database_availability()
    if not database.ok:
        return HubStatus(backend="local", cloud=False, available=False, reason=database.reason)
    return HubStatus(backend="local", cloud=False, available=True, reason=reason)


def hub_status() -> HubStatus:
    """The backend MEMORYHUB_BACKEND chooses, whether it answers, and why it was chosen."""
    choice = settings.MEMORYHUB_BACKEND
    if choice == "null":
        return HubStatus(backend="null", cloud=False, available=True, reason="MEMORYHUB_BACKEND=null: nothing is kept")
    if choice == "local":
        return _local_status("MEMORYHUB_BACKEND=local: the hub's own database; nothing leaves this machine")
    if choice == "honcho":
        availability, cloud = _honcho_probe()
        return HubStatus(
            backend="honcho",
            cloud=cloud,
            available=availability.ok,
            reason=f"MEMORYHUB_BACKEND=honcho: {availability.reason}",
        )
    if not settings.HONCHO_API_KEY:
        return _local_status("auto: no HONCHO_API_KEY is set, so local, the default: nothing leaves this machine")
    availability, cloud = _honcho_probe()
    if availability.ok:
        return HubStatus(
            backend="honcho",
            cloud=cloud,
            available=True,
            reason=f"auto: HONCHO_API_KEY is set and {availability.reason}",
        )
    return _local_status(f"auto: HONCHO_API_KEY is set but Honcho is not available ({availability.reason}), so local")
