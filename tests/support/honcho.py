"""The Honcho double as the tests reach it: its workspace, a config and a backend on it, a closed port."""

import socket

from django.contrib.auth.models import User

from honcho_double import HonchoDouble
from honcho_double.server import IN_PROCESS_BASE_URL
from memories.backends.honcho import HonchoBackend, HonchoConfig

TEST_WORKSPACE = "memoryhub-tests"


def double_config(
    base_url: str = IN_PROCESS_BASE_URL, *, api_key: str = "test-key", timeout: float = 2.0
) -> HonchoConfig:
    return HonchoConfig(
        base_url=base_url, api_key=api_key, workspace_id=TEST_WORKSPACE, timeout=timeout, configured=True
    )


def honcho_backend_for(account: User, double: HonchoDouble) -> HonchoBackend:
    return HonchoBackend(owner=account, config=double_config(), http_client=double.http_client())


def closed_port_url() -> str:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{placeholder.getsockname()[1]}"
