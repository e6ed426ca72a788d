"""Where entries can live, and which one the hub reports as in use."""

from dataclasses import dataclass

from django.db import DatabaseError, connection


@dataclass(frozen=True)
class HubStatus:
    backend: str
    cloud: bool
    available: bool
    reason: str


def hub_status() -> HubStatus:
    """The backend in use and whether it answers: the hub's own database."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        return HubStatus(backend="local", cloud=False, available=False, reason=f"the database did not answer: {error}")
    return HubStatus(backend="local", cloud=False, available=True, reason="local is the default: nothing leaves this machine")
