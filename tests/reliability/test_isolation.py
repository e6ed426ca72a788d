"""Another account's token reaches nothing of the owner's, on every route of the API and every tool action.

Routes are discovered from the URL resolver, so a route added later is walked too.
"""

import json
import uuid

import pytest
from django.db import connection
from django.test import Client

from memories import selectors, services
from memories.models import MemoryEvent
from memories.tool import ACTIONS
from memoryhub.health import HEALTH_PATH
from tests.support.figures import record_figures
from tests.support.routes import all_routes

SECRET = f"SECRET-{uuid.uuid4().hex}"
LIVE_KEY, DELETED_KEY, UID = "secret-key", "gone-key", "alice"
# Routes outside the accounts' data: anyone may read them (the schema) or they hold no memories.
PUBLIC_ROUTES = {"api/schema/", "api/docs/"}


@pytest.fixture
def owners_memories(owner, settings):
    settings.MEMORYHUB_RATE_LIMIT = ""
    services.entry_put(owner=owner, uid=UID, key=LIVE_KEY, value=f"{SECRET} live", kind="fact", meta={"marker": SECRET})
    services.entry_put(owner=owner, uid=UID, key=LIVE_KEY, value=f"{SECRET} live, changed")
    services.entry_put(owner=owner, uid=UID, key=DELETED_KEY, value=f"{SECRET} deleted")
    services.entry_delete(owner=owner, uid=UID, key=DELETED_KEY)
    return owner


def _owner_state(owner) -> tuple:
    entries = sorted(selectors.entry_list(owner=owner, uid=UID).values_list("key", "value", "kind", "version", "meta"))
    history = list(
        MemoryEvent.objects.filter(owner=owner).order_by("id").values_list("key", "action", "version", "value_after")
    )
    return entries, history


def _send(client, method: str, path: str):
    # A body each route takes (a write refuses fields it does not take, before it looks for the entry).
    body = {"key": LIVE_KEY, "uid": UID, "value": "intruder"}
    if path.endswith("/tool/"):
        body |= {"query": SECRET[:12], "action": "get"}
    return client.generic(method.upper(), path, json.dumps(body), content_type="application/json")


def _leaks(response) -> bool:
    return SECRET in response.content.decode(errors="replace")


def _api_requests() -> list[tuple[str, str, bool]]:
    """(method, path, names-an-owner's-thing) for every API route and method, reads first."""
    requests: list[tuple[str, str, bool]] = []
    for route in all_routes(under="api/v1/"):
        for key in (LIVE_KEY, DELETED_KEY) if "key" in route.parameters else (None,):
            path = route.path({"uid": UID, "key": key or LIVE_KEY})
            requests.extend((method, path, bool(route.parameters)) for method in route.methods())
    order = {"get": 0, "delete": 1, "patch": 1, "post": 2, "put": 2}
    # Reads, then changes to what exists, then writes that may create the stranger's own entries.
    return sorted(requests, key=lambda request: 1 if request[1].endswith("/restore/") else order[request[0]])


def test_the_route_walk_finds_the_api(owners_memories):
    paths = {path for _, path, _ in _api_requests()}
    assert f"/api/v1/users/{UID}/memories/{LIVE_KEY}/" in paths
    assert f"/api/v1/users/{UID}/memories/{DELETED_KEY}/restore/" in paths
    assert "/api/v1/tool/" in paths


def test_a_second_account_gets_404_or_403_on_every_route_and_never_the_owners_data(owners_memories, stranger_api):
    before = _owner_state(owners_memories)
    answers = []
    for method, path, names_owners_thing in _api_requests():
        response = _send(stranger_api, method, path)
        answers.append((method, path, response.status_code))
        assert not _leaks(response), f"{method} {path} showed the owner's data"
        assert response.status_code < 500, f"{method} {path} answered {response.status_code}"
        if (names_owners_thing and method in ("get", "delete", "patch")) or path.endswith("/restore/"):
            # A list (or the context block) scoped to the owner's uid answers as for a uid never used:
            # an empty page, an empty block.
            body = response.json() if response.status_code == 200 else {}
            empty_page = body.get("count") == 0 or (body.get("total") == 0 and body.get("entries") == [])
            assert response.status_code in (404, 403, 412) or empty_page, (
                f"{method} {path} answered {response.status_code}"
            )
    assert _owner_state(owners_memories) == before
    assert len(answers) >= 15
    record_figures(
        "route walk as a second account",
        connection.vendor,
        routes=len(all_routes(under="api/v1/")),
        requests=len(answers),
        by_status={
            str(code): sum(1 for *_, status in answers if status == code) for code in sorted({a[2] for a in answers})
        },
        owner_data_shown=0,
        owner_data_changed=0,
    )


def test_no_route_of_the_api_answers_without_credentials(owners_memories, anonymous_api):
    for method, path, _ in _api_requests():
        response = _send(anonymous_api, method, path)
        assert response.status_code in (401, 403), f"{method} {path} answered {response.status_code}"
        assert not _leaks(response)


@pytest.mark.parametrize("action", ACTIONS)
def test_every_tool_action_with_a_second_accounts_token_reaches_nothing_of_the_owners(
    owners_memories, stranger_api, action
):
    before = _owner_state(owners_memories)
    for key in (LIVE_KEY, DELETED_KEY):
        arguments = {"action": action, "uid": UID, "key": key, "query": SECRET[:12]}
        response = stranger_api.post("/api/v1/tool", arguments, format="json")
        assert response.status_code < 500
        assert not _leaks(response)
        reply = response.json()
        if action == "get":
            assert reply == {"ok": False, "error": "not found"}
        if action in ("list", "query"):
            assert reply["count"] == 0
    assert _owner_state(owners_memories) == before


@pytest.mark.slow
def test_every_form_and_write_refuses_a_logged_in_session_without_a_csrf_token(owners_memories, staff):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(staff)
    values = {"uid": UID, "key": LIVE_KEY}
    accepted = []
    for route in all_routes():
        path = route.path(values)
        for method in ("post", "delete"):
            response = browser.generic(method.upper(), path, "", content_type="application/x-www-form-urlencoded")
            # /healthz is answered ahead of every middleware (memoryhub.health) and takes GET and HEAD alone.
            refused = (403, 405) if path == HEALTH_PATH else (403,)
            if response.status_code not in refused:
                accepted.append((method, path, response.status_code))
    assert accepted == []
    assert _owner_state(owners_memories)[0][0][1] == f"{SECRET} live, changed"
