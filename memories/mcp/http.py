"""MCP over Streamable HTTP at /mcp, on the hub's own address, beside Django.

`with_mcp(django_application)` is the hub's ASGI application (memoryhub.asgi): /mcp goes to the
MCP server, every other path to Django. The MCP side is stateless (a fresh transport per request,
JSON answers, no session to find again), so any worker process answers any request. Before a
request reaches the SDK it passes the checks the REST API makes, in the same order:

- the Host header must be one of ALLOWED_HOSTS (400 otherwise, as Django answers);
- a browser's Origin must be the hub's own: its host one of ALLOWED_HOSTS ("*" does not count) or the
  origin listed in CSRF_TRUSTED_ORIGINS (403 otherwise), against DNS rebinding, as the MCP
  specification asks; a request without Origin (not from a browser) passes;
- a body over MEMORYHUB_MAX_BODY_BYTES is refused with 413 before it is read;
- the account's API token as a bearer (`Authorization: Bearer <token>`, or `Token <token>` as the
  REST API takes it, and read as it reads it: from the worker's tokens, memoryhub.authentication): 401
  without one or with one that is unknown or revoked;
- the per-token rate limit, the very counter DRF's throttle keeps (memoryhub.api.TokenRateThrottle),
  so REST and MCP calls with one token share MEMORYHUB_RATE_LIMIT: 429 with Retry-After beyond.

Each refusal is a JSON-RPC error (id null, data {"status": ..., "retry_after": ...}), so an SDK client raises
it with its sentence. The account is then put in the ASGI scope, where the tools find it
(tools.ACCOUNT_SCOPE_KEY).
"""

import asyncio
import json
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError
from django.http import HttpRequest
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework.request import Request
from rest_framework.views import APIView
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memories.mcp.stdio import INVALID_REQUEST, NO_VALID_ID, error_answer, named_id, names_no_valid_id
from memories.mcp.tools import ACCOUNT_SCOPE_KEY, build_server, in_django
from memoryhub.api import TokenRateThrottle, database_unavailable
from memoryhub.authentication import token_read
from memoryhub.numbers import plain_whole_number

logger = logging.getLogger(__name__)

MCP_PATHS = ("/mcp", "/mcp/")
AUTH_SCHEMES = ("bearer", "token")


def _account_in_scope(ctx: Context) -> User:
    request = ctx.request_context.request
    if request is None:
        raise LookupError("an MCP call over HTTP without its HTTP request")
    return request.scope[ACCOUNT_SCOPE_KEY]


def _allowed_hosts() -> list[str]:
    # As Django's HttpRequest.get_host: with DEBUG and no ALLOWED_HOSTS, the local names pass.
    if settings.DEBUG and not settings.ALLOWED_HOSTS:
        return [".localhost", "127.0.0.1", "[::1]"]
    return list(settings.ALLOWED_HOSTS)


def host_allowed(host: str) -> bool:
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, _allowed_hosts())


def origin_allowed(origin: str) -> bool:
    """Whether a browser at origin may call /mcp: the hub's own hosts, or an origin trusted for forms."""
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    domain, _port = split_domain_port(parts.netloc)
    return bool(domain) and validate_host(domain, [host for host in _allowed_hosts() if host != "*"])


@dataclass(frozen=True)
class Admission:
    account: User | None = None
    status: int = 200
    detail: str = ""
    retry_after: int | None = None


def admit(token_key: str, client_address: str) -> Admission:
    """The token's account if it may make this request now; else the status and sentence to answer."""
    # Read as the REST API reads it: from the worker's tokens when known (memoryhub.authentication).
    token = token_read(token_key)
    if token is None or not token.user.is_active:
        return Admission(status=401, detail="Invalid token: send an API token of an active account.")
    # The throttle reads the request's token and account (and the address when there is no token).
    http_request = HttpRequest()
    http_request.META["REMOTE_ADDR"] = client_address
    request = Request(http_request)
    request.user, request.auth = token.user, token
    throttle = TokenRateThrottle()
    if not throttle.allow_request(request, APIView()):
        wait = throttle.wait()
        retry_after = math.ceil(wait) if wait is not None else None
        return Admission(
            status=429,
            detail=f"Request was throttled (MEMORYHUB_RATE_LIMIT is {settings.MEMORYHUB_RATE_LIMIT}): "
            f"wait {retry_after} seconds.",
            retry_after=retry_after,
        )
    return Admission(account=token.user)


# A refusal's JSON-RPC code: a request not as /mcp takes it (its Host, size, method or media type) is an invalid
# request; one refused as it stands (no valid token, a foreign origin, the rate limit) a server error.
REQUEST_REFUSED = -32000
INVALID_STATUSES = frozenset({400, 405, 413, 415})


async def _answer(
    send: Send,
    status: int,
    detail: str,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    retry_after: int | None = None,
    code: str | None = None,
) -> None:
    """A refusal before the SDK reads the request: a JSON-RPC error under id null (the body is not read yet), which
    an SDK client raises with this message (a body of another shape, it replaces by "Server returned an error
    response"); its data names the HTTP status, and for a 429 the seconds Retry-After says."""
    data: dict[str, int | str] = {"status": status}
    if retry_after is not None:
        data["retry_after"] = retry_after
    if code is not None:
        data["code"] = code
    rpc_code = INVALID_REQUEST if status in INVALID_STATUSES else REQUEST_REFUSED
    await _answer_json(send, status, error_answer(rpc_code, detail, data=data), headers)


async def _answer_json(send: Send, status: int, data: object, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(data).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class MCPApplication:
    """The ASGI application behind /mcp: the checks above, then the SDK's stateless transport."""

    def __init__(self) -> None:
        self.server = build_server(_account_in_scope)
        # The checks on Host and Origin are made here, with the hub's settings; the SDK's own
        # (localhost only) would refuse a hub served under its real name.
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = self.server.session_manager
        self._task: asyncio.Task | None = None
        self._stopping = asyncio.Event()
        self._starting = asyncio.Lock()

    async def _serve(self, started: asyncio.Event) -> None:
        # The transport's task group lives in a task of its own, entered and left there.
        async with self.manager.run():
            started.set()
            await self._stopping.wait()

    async def start(self) -> None:
        async with self._starting:
            if self._task is None:
                started = asyncio.Event()
                self._task = asyncio.get_running_loop().create_task(self._serve(started))
                await started.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._stopping.set()
            await self._task
            self._task = None

    async def lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if not host_allowed(headers.get("host", "")):
            await _answer(send, 400, "Invalid Host header: it must be one of ALLOWED_HOSTS.")
            return
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin):
            await _answer(
                send,
                403,
                f"Origin {origin!r} may not call /mcp: only the hub's own hosts (ALLOWED_HOSTS) and "
                "CSRF_TRUSTED_ORIGINS may.",
            )
            return
        declared = headers.get("content-length", "0")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if not declared.isascii() or not declared.isdigit():
            await _answer(send, 400, "Content-Length must be a whole number of bytes.")
            return
        size = plain_whole_number(declared)
        if size is None or size > limit:
            await _answer(send, 413, _too_large(f"more than {limit}" if size is None else str(size), limit))
            return
        scheme, _, token_key = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() not in AUTH_SCHEMES or not token_key.strip():
            await _answer(
                send,
                401,
                "Authentication credentials were not provided: send the account's API token as "
                "'Authorization: Bearer <token>'.",
                [(b"www-authenticate", b'Bearer realm="memoryhub"')],
            )
            return
        client = scope.get("client") or ("", 0)
        try:
            admission = await in_django(lambda: admit(token_key.strip(), client[0]))
        except OperationalError as error:
            unavailable = database_unavailable(error)
            if unavailable is None:
                raise
            # As the REST API answers it (memoryhub.api), in JSON-RPC: busy (nothing done) or out of reach.
            logger.warning("database unavailable, /mcp answered 503 (%s): %s", unavailable.default_code, error)
            await _answer(
                send,
                503,
                str(unavailable.default_detail),
                [(b"retry-after", str(unavailable.wait).encode())],
                retry_after=unavailable.wait,
                code=str(unavailable.default_code),
            )
            return
        if admission.account is None:
            extra = [(b"www-authenticate", b'Bearer realm="memoryhub"')] if admission.status == 401 else []
            if admission.retry_after is not None:
                extra.append((b"retry-after", str(admission.retry_after).encode()))
            await _answer(send, admission.status, admission.detail, extra, retry_after=admission.retry_after)
            return
        if scope["method"] == "GET":
            # A stateless server sends nothing unasked: a GET's event stream would stay open and empty for ever.
            await _answer(
                send,
                405,
                "/mcp takes POST only: this server is stateless and opens no event stream.",
                [(b"allow", b"POST")],
            )
            return
        if scope["method"] == "POST" and not headers.get("content-type", "").lower().startswith("application/json"):
            # As the REST API answers another media type (the SDK's own answer is a plain-text 400).
            await _answer(send, 415, "Content-Type must be application/json: /mcp takes JSON-RPC messages.")
            return
        if self._task is None:
            # Served without the ASGI lifespan protocol: start the transport's task group on first use.
            await self.start()
        scope = {**scope, "path": "/mcp", ACCOUNT_SCOPE_KEY: admission.account}
        # The whole body first (as the SDK reads it), to answer what the SDK would not.
        read: list[Message] = []
        body = bytearray()
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            body.extend(message.get("body", b""))
            if len(body) > limit:
                await _answer(send, 413, _too_large(f"more than {limit}", limit))
                return
            if not message.get("more_body", False):
                break
        if body and _names_no_valid_id(bytes(body)):
            # The SDK takes a message whose id is 1.5 or true for a notification: nothing done, nothing said.
            await _answer_json(send, 400, error_answer(INVALID_REQUEST, NO_VALID_ID))
            return

        async def receiving() -> Message:
            return read.pop(0) if read else await receive()

        await self.manager.handle_request(scope, receiving, _plain_validation_errors(send, body))


def _too_large(declared: str, limit: int) -> str:
    return f"The request body is {declared} bytes; the limit is {limit} bytes (MEMORYHUB_MAX_BODY_BYTES)."


def _names_no_valid_id(body: bytes) -> bool:
    if b'"id"' not in body:
        return False
    try:
        return names_no_valid_id(json.loads(body))
    except (ValueError, RecursionError):
        return False  # the SDK answers it: a parse error


# What answers a body that is no JSON-RPC message, in place of the SDK's own validation error (pydantic's report of
# every member of its union, with the library's version and links to its site: a thousand characters and more).
NOT_A_MESSAGE = (
    "Invalid request: the body is not one JSON-RPC 2.0 request, notification or response (a batch, a JSON array, "
    "is not taken)."
)


def _named_id(request: bytes) -> str | int | None:
    """The id a request's body names (as stdio answers with it), or None."""
    try:
        return named_id(json.loads(request))
    except (ValueError, RecursionError):
        return None


def _plain_message(body: bytes, request: bytes) -> bytes:
    try:
        answer = json.loads(body)
    except ValueError:
        return body
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or not str(error.get("message", "")).startswith("Validation error:"):
        return body
    return json.dumps(error_answer(INVALID_REQUEST, NOT_A_MESSAGE, _named_id(request))).encode()


def _plain_validation_errors(send: Send, request: bytearray) -> Send:
    """send, with a whole JSON answer that is the SDK's validation error of the body (request, as read) said as
    NOT_A_MESSAGE, under the id the body names."""
    started: Message | None = None

    async def sending(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = message
            return
        if started is not None:
            start, started = started, None
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                body = _plain_message(message.get("body", b""), bytes(request))
                headers = [
                    (name, value) for name, value in start.get("headers", []) if name.lower() != b"content-length"
                ]
                await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                await send({**message, "body": body})
                return
            await send(start)
        await send(message)

    return sending


def with_mcp(django_application: Callable[..., Awaitable[None]]) -> ASGIApp:
    """The hub's ASGI application: /mcp to the MCP server, everything else to Django."""
    mcp_application = MCPApplication()

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await mcp_application.lifespan(receive, send)
        elif scope["type"] == "http" and scope["path"] in MCP_PATHS:
            await mcp_application(scope, receive, send)
        else:
            await django_application(scope, receive, send)

    return application
