"""What every page refuses or adds: bad paths and parameters, chunked bodies, security and cache headers, logs."""

import asyncio
import io
import logging
from typing import Any
from wsgiref.util import setup_testing_defaults

import pytest
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.test import Client
from rest_framework.authtoken.models import Token

from memories import selectors, services
from memoryhub.middleware import CSP_DASHBOARD, CSP_OWN_SCRIPTS, Message, RequestSanityMiddleware, asgi_body_limit
from memoryhub.wsgi import application as wsgi_application


@pytest.mark.parametrize("path", ["/users/?search=a%00b", "/user/?uid=alice%00", "/memory/?uid=alice&key=x%00y"])
def test_nul_in_a_dashboard_query_parameter_is_a_400(owner_client, path):
    response = owner_client.get(path)

    assert response.status_code == 400
    assert "NUL" in response.content.decode()


@pytest.mark.parametrize(
    "path", ["/api/v1/users/alice/memories/?q=%FF", "/api/v1/users/alice/memories/?q=caf%E9", "/user/?uid=%ED%A0%80"]
)
def test_a_query_string_that_is_not_utf8_is_a_400_not_a_search_for_a_replacement_character(
    owner, owner_client, owner_api, path
):
    services.entry_put(owner=owner, uid="alice", key="odd", value="holds \ufffd, the replacement character")
    client = owner_api if path.startswith("/api/") else owner_client

    response = client.get(path)

    assert response.status_code == 400
    assert "query string is not valid UTF-8" in response.content.decode()


@pytest.mark.parametrize("path", ["/api/v1/users/alice/memories/", "/user/", "/api/v1/nowhere/"])
def test_a_query_string_of_more_parameters_than_the_limit_is_a_400_naming_it_without_a_traceback(
    owner_client, owner_api, settings, caplog, path
):
    client = owner_api if path.startswith("/api/") else owner_client
    many = "&".join(f"a{number}=1" for number in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))

    with caplog.at_level(logging.INFO):
        response = client.get(f"{path}?uid=alice&{many}")

    assert response.status_code == 400
    said = f"The query string holds more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} parameters."
    if path.startswith("/api/"):
        assert response.json() == {"detail": said}
    else:
        assert response.content.decode() == said
    assert not [record for record in caplog.records if record.exc_info]
    # At the limit, the page answers.
    at_limit = "&".join(f"a{number}=1" for number in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS - 1))
    assert client.get(f"/api/v1/users/alice/memories/?{at_limit}").status_code == 200


def test_a_host_the_hub_does_not_serve_is_refused_in_json_under_the_api(owner_api, owner_client):
    api = owner_api.get("/api/v1/users/", HTTP_HOST="elsewhere.example")
    page = owner_client.get("/users/", HTTP_HOST="elsewhere.example")

    assert (api.status_code, api.json()) == (400, {"detail": "Bad request: the hub cannot answer it as it was sent."})
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")


def test_a_query_string_in_utf8_is_read_as_its_characters(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="drink", value="café au lait")

    response = owner_api.get("/api/v1/users/alice/memories/?q=caf%C3%A9&match=substring")

    assert response.status_code == 200
    assert [result["key"] for result in response.json()["results"]] == ["drink"]


def _wsgi_put(path_info: str, token: str) -> str:
    """PUT through the hub's WSGI application, with PATH_INFO as a WSGI server decodes it (bytes as latin-1)."""
    body = b'{"value": "v"}'
    environ: dict = {}
    setup_testing_defaults(environ)
    environ.update(
        REQUEST_METHOD="PUT",
        PATH_INFO=path_info,
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(len(body)),
        HTTP_AUTHORIZATION=f"Token {token}",
        HTTP_HOST="localhost",
        SERVER_NAME="localhost",
    )
    environ["wsgi.input"] = io.BytesIO(body)
    statuses: list[str] = []
    b"".join(wsgi_application(environ, lambda status, headers: statuses.append(status)))
    return statuses[0]


@pytest.mark.django_db(transaction=True)
def test_a_path_segment_that_is_not_utf8_is_a_400_not_another_key(owner):
    token = Token.objects.get(user=owner).key

    assert _wsgi_put("/api/v1/users/alice/memories/caf\xe9", token).startswith("400")  # /caf%E9
    assert not selectors.entry_list(owner=owner, uid="alice").exists()
    assert _wsgi_put("/api/v1/users/alice/memories/caf\xc3\xa9", token).startswith("201")  # /caf%C3%A9
    assert _wsgi_put("/api/v1/users/alice/memories/100%", token).startswith("201")  # /100%25
    assert sorted(selectors.entry_list(owner=owner, uid="alice").values_list("key", flat=True)) == ["100%", "café"]


def test_under_asgi_a_path_that_is_not_utf8_is_a_400_too(db):
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/memory/caf\ufffd",  # what an ASGI server decodes /memory/caf%E9 to
        "raw_path": b"/memory/caf%E9",
        "query_string": b"",
        "headers": [],
    }
    request = ASGIRequest(scope, io.BytesIO(b""))

    response = RequestSanityMiddleware(lambda request: HttpResponse("reached"))(request)

    assert response.status_code == 400


def test_a_percent_sign_typed_in_a_key_still_reaches_its_entry(owner, owner_api):
    assert owner_api.put("/api/v1/users/alice/memories/100%25", {"value": "v"}, format="json").status_code == 201
    assert selectors.entry_get(owner=owner, uid="alice", key="100%") is not None


def test_a_chunked_body_on_a_server_that_cannot_read_it_is_refused_with_411(owner, owner_api):
    response = owner_api.generic(
        "PUT",
        "/api/v1/users/alice/memories/language",
        b"",
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )

    assert response.status_code == 411
    assert selectors.entry_get(owner=owner, uid="alice", key="language") is None


def _asgi_call(app, body_parts: list[bytes], headers: list[tuple[bytes, bytes]] | None = None) -> list[dict]:
    scope = {"type": "http", "method": "PUT", "path": "/api/v1/users/alice/memories/x", "headers": headers or []}
    messages = [
        {"type": "http.request", "body": part, "more_body": index < len(body_parts) - 1}
        for index, part in enumerate(body_parts)
    ]
    sent: list[dict] = []

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_under_asgi_a_chunked_body_over_the_cap_is_refused_before_it_is_read_whole(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    reached: list[bytes] = []

    async def application(scope: Message, receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])

    sent = _asgi_call(asgi_body_limit(application), [b"123456", b"789012", b"never read"])

    assert sent[0]["status"] == 413 and reached == []


def test_under_asgi_a_body_declared_over_the_cap_is_refused_before_any_of_it_is_read(settings):
    # A client declaring 9,999,999 bytes and sending 17 was answered only once the limit's worth came: never.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    reached: list[bytes] = []

    async def application(scope: Message, receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])

    sent = _asgi_call(asgi_body_limit(application), [], headers=[(b"content-length", b"9999999")])
    within = _asgi_call(asgi_body_limit(application), [b"12345"], headers=[(b"content-length", b"5")])

    assert sent[0]["status"] == 413 and len(sent) == 2
    assert b"over the limit of 10 bytes" in sent[1]["body"]
    assert within == [] and reached == [b"12345"]


def test_under_asgi_a_chunked_body_within_the_cap_reaches_the_application_whole(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    reached: list[bytes] = []

    async def application(scope: Message, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            reached.append(message["body"])
            if not message["more_body"]:
                break

    _asgi_call(asgi_body_limit(application), [b'{"value": ', b'"chunked"}'])

    assert b"".join(reached) == b'{"value": "chunked"}'


def test_pages_and_api_answers_with_values_are_never_stored_by_a_cache(owner, owner_client, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")

    for response in (
        owner_client.get("/token/"),
        owner_client.get("/memory/?uid=alice&key=language"),
        owner_api.get("/api/v1/users/alice/memories/language"),
    ):
        assert "no-store" in response["Cache-Control"]


def test_the_dashboard_allows_no_script_and_the_admin_and_api_docs_only_their_own(owner_client, staff_client):
    assert owner_client.get("/")["Content-Security-Policy"] == CSP_DASHBOARD
    assert "script-src 'none'" in CSP_DASHBOARD
    for path in ("/admin/", "/api/docs/", "/api/v1/info?format=api"):
        policy = staff_client.get(path)["Content-Security-Policy"]
        assert policy == CSP_OWN_SCRIPTS, path
    assert "script-src 'self';" in CSP_OWN_SCRIPTS and "unsafe-eval" not in CSP_OWN_SCRIPTS


def test_the_api_docs_page_loads_its_setup_as_a_script_file_not_inline(staff_client):
    page = staff_client.get("/api/docs/").content.decode()

    assert "<script>" not in page.replace(" ", "")
    assert staff_client.get("/api/docs/?script=").status_code == 200


def test_the_development_servers_log_has_no_query_strings():
    from memoryhub.logs import WithoutQueryStrings

    record = logging.LogRecord(
        "django.server",
        logging.INFO,
        __file__,
        1,
        '"%s" %s %s',
        ("GET /user/?uid=alice&q=secret HTTP/1.1", "200", "5"),
        None,
    )

    WithoutQueryStrings().filter(record)

    assert record.getMessage() == '"GET /user/ HTTP/1.1" 200 5'
    assert logging.getLogger("django.server").filters[0].__class__ is WithoutQueryStrings


def test_an_anonymous_visitor_is_refused_without_seeing_a_page_of_the_dashboard(db):
    response = Client().get("/token/")

    assert response.status_code == 302 and "no-store" in response["Cache-Control"]
