"""Which backend the hub reports as in use (MEMORYHUB_BACKEND), and why, in /api/v1/info and the tool."""

import socket
from collections.abc import Iterator

import pytest

from honcho_double import HonchoDouble
from memories.backends import UnknownBackend, backend_class, forget_honcho_probe, hub_status
from memories.backends.null import NullBackend


@pytest.fixture(autouse=True)
def _fresh_probe() -> Iterator[None]:
    forget_honcho_probe()
    yield
    forget_honcho_probe()


@pytest.fixture
def served_double() -> Iterator[str]:
    double = HonchoDouble(api_key="key")
    with double.running() as base_url:
        yield base_url


def closed_port_url() -> str:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{placeholder.getsockname()[1]}"


def test_backends_are_found_by_name():
    assert backend_class("null") is NullBackend
    with pytest.raises(UnknownBackend, match="choose from null, local, honcho"):
        backend_class("redis")


def test_auto_without_an_api_key_is_local_and_says_so(owner_api, settings):
    settings.MEMORYHUB_BACKEND, settings.HONCHO_API_KEY = "auto", ""
    info = owner_api.get("/api/v1/info").json()
    assert (info["backend"], info["cloud"], info["available"]) == ("local", False, True)
    assert "no HONCHO_API_KEY" in info["reason"]


def test_auto_with_an_api_key_and_honcho_answering_is_honcho(owner_api, settings, served_double):
    settings.MEMORYHUB_BACKEND, settings.HONCHO_API_KEY, settings.HONCHO_URL = "auto", "key", served_double
    info = owner_api.get("/api/v1/info").json()
    assert (info["backend"], info["available"]) == ("honcho", True)
    assert served_double in info["reason"]


def test_auto_with_honcho_unreachable_falls_back_to_local_with_the_reason(owner_api, settings):
    settings.MEMORYHUB_BACKEND, settings.HONCHO_API_KEY, settings.HONCHO_URL = "auto", "key", closed_port_url()
    info = owner_api.get("/api/v1/info").json()
    assert (info["backend"], info["available"]) == ("local", True)
    assert "could not reach Honcho" in info["reason"]


def test_honcho_chosen_by_name_with_a_wrong_key_is_unavailable_with_the_reason(owner_api, settings, served_double):
    settings.MEMORYHUB_BACKEND, settings.HONCHO_API_KEY, settings.HONCHO_URL = "honcho", "wrong", served_double
    reply = owner_api.post("/api/v1/tool", {"action": "info"}, format="json").json()
    assert reply == {"ok": True, "backend": "honcho", "cloud": True, "available": False}
    assert "401" in hub_status().reason


@pytest.mark.parametrize(("choice", "available"), [("local", True), ("null", True)])
def test_local_and_null_chosen_by_name_need_no_honcho(settings, choice: str, available: bool, db):
    settings.MEMORYHUB_BACKEND, settings.HONCHO_API_KEY = choice, "key"
    status = hub_status()
    assert (status.backend, status.available) == (choice, available)
    assert f"MEMORYHUB_BACKEND={choice}" in status.reason
