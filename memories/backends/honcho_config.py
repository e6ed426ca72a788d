"""Where Honcho is, read from the settings: importable without the Honcho SDK, so the hub can tell
whether Honcho is configured without loading it (memories.backends.honcho imports the SDK)."""

from dataclasses import dataclass

from django.conf import settings

CLOUD_URL = "https://api.honcho.dev"


@dataclass(frozen=True)
class HonchoConfig:
    """Where Honcho is and how long to wait for it. `configured` is False until a URL or key is set."""

    base_url: str
    api_key: str
    workspace_id: str
    timeout: float
    configured: bool

    @classmethod
    def from_settings(cls) -> "HonchoConfig":
        return cls(
            base_url=settings.HONCHO_URL or CLOUD_URL,
            api_key=settings.HONCHO_API_KEY,
            workspace_id=settings.HONCHO_WORKSPACE_ID,
            timeout=settings.HONCHO_TIMEOUT,
            configured=bool(settings.HONCHO_URL or settings.HONCHO_API_KEY),
        )

    @property
    def is_cloud(self) -> bool:
        """Always True: entries sent to Honcho leave the hub's own database for a service it does not
        control, wherever that service runs, so Honcho scores privacy as a cloud."""
        return True
