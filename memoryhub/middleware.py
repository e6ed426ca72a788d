"""Middleware of the project itself."""

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, ClassVar
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from whitenoise.middleware import WhiteNoiseMiddleware

from memoryhub.numbers import plain_whole_number


class HealthCheckMiddleware:
    """Answers GET /healthz ahead of the host check and the HTTPS redirect.

    A load balancer, or `curl http://127.0.0.1:8000/healthz` on the hub's own machine, asks by the
    server's address over plain HTTP. With the production settings (ALLOWED_HOSTS naming only the
    public host, SECURE_SSL_REDIRECT) Django would answer it 400 or 301 and never say whether the hub
    is well. The health check builds no link from the Host header and shows no account's data, so it
    needs neither check; it keeps the headers every answer has (SecurityHeadersMiddleware). Every other
    path goes through both checks as before.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        from memoryhub.health import HEALTH_PATH, healthz  # after the apps are ready: it reads the models

        self.get_response = get_response
        self.path = HEALTH_PATH
        self.healthz = SecurityHeadersMiddleware(healthz)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == self.path:
            return self.healthz(request)
        return self.get_response(request)


class RequestBodyLimitMiddleware:
    """Refuses a request whose body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE (MEMORYHUB_MAX_BODY_BYTES)
    with 413, before anything reads it.

    Django applies that limit only when it reads the body itself (request.body, form data); the
    REST framework's JSON parser reads the stream directly and would take a body of any size.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if not declared.isascii() or not declared.isdigit():
            return JsonResponse({"detail": "Content-Length must be a whole number of bytes."}, status=400)
        read = plain_whole_number(declared)
        # None: more digits than any size has, over the limit.
        size = limit + 1 if read is None else read
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        body = getattr(request, "_stream", None)
        if hasattr(request, "scope") and body is not None and hasattr(body, "seek"):
            # ASGI: the server has read the whole body, chunked or not; its real size is what counts.
            size = max(size, body.seek(0, 2))
            body.seek(0)
        elif chunked:
            # WSGI servers hand Django no length for a chunked body, which it would read as empty.
            return JsonResponse(
                {"detail": "Send the body with a Content-Length: this server does not read chunked bodies."},
                status=411,
            )
        if limit is not None and size > limit:
            return JsonResponse(
                {
                    "detail": (
                        f"The request body is {size if read is not None else f'more than {limit}'} bytes; "
                        f"the limit is {limit} bytes (MEMORYHUB_MAX_BODY_BYTES)."
                    )
                },
                status=413,
            )
        return self.get_response(request)


NOT_UTF8_PATH = "The path is not valid UTF-8: percent-encode the UTF-8 bytes of each character."
NOT_UTF8_QUERY = "The query string is not valid UTF-8: percent-encode the UTF-8 bytes of each character."


def _query_is_utf8(query: str) -> bool:
    """Whether a query string (as the server hands it over: its bytes as latin-1 characters) holds UTF-8 only,
    once percent-decoded. Django would put U+FFFD in place of each byte that is not."""
    if query.isascii() and "%" not in query:
        return True
    try:
        unquote_to_bytes(query.encode("latin-1")).decode("utf-8")
    except UnicodeError:
        return False
    return True


def _raw_path_bytes(request: HttpRequest) -> bytes | None:
    """An ASGI request's path as the bytes the client percent-encoded (the server's decoded path may have
    replaced bad bytes); None for WSGI, whose path wsgi_path_check has looked at already."""
    scope = getattr(request, "scope", None)
    if scope is None:
        return None
    raw = scope.get("raw_path")
    return unquote_to_bytes(raw.split(b"?", 1)[0]) if raw else None


def wsgi_path_check(app: Callable) -> Callable:
    """Wrap a WSGI application: a path whose bytes are not UTF-8 gets 400 before Django re-quotes them.

    A WSGI server hands over PATH_INFO as its decoded bytes in latin-1 characters; Django turns bytes
    that are not UTF-8 back into %XX text, so `caf%E9` would reach the views as the key `caf%E9`.
    """

    def checked(environ: dict, start_response: Callable) -> object:
        try:
            environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8")
        except UnicodeError:
            body = json.dumps({"detail": NOT_UTF8_PATH}).encode()
            start_response(
                "400 Bad Request", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            return [body]
        return app(environ, start_response)

    return checked


class RequestSanityMiddleware:
    """Refuses with 400 what no page can answer: a path that is not UTF-8 (under ASGI; wsgi_path_check
    does it for WSGI), a query string that is not UTF-8 or of more parameters than DATA_UPLOAD_MAX_NUMBER_FIELDS,
    NUL in a query parameter.

    Without this, a path segment like `caf%E9` reaches the views as the literal text `caf%E9` (Django
    re-quotes bytes that are not UTF-8), so a key would silently become another key; and NUL in a
    dashboard query parameter reaches the database, which refuses it with a 500. The API answers NUL
    in its own parameters with a field error (memories.api.views); this covers every path. A query string's
    bytes that are not UTF-8 would reach every page as U+FFFD: `?q=%FF` would search for that character.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        raw_path = _raw_path_bytes(request)
        try:
            if raw_path is not None:
                raw_path.decode("utf-8")
        except UnicodeDecodeError:
            return _bad_request(request, NOT_UTF8_PATH)
        query_string = request.META.get("QUERY_STRING", "")
        if not _query_is_utf8(query_string):
            return _bad_request(request, NOT_UTF8_QUERY)
        # Counted as Django's parser counts them, before anything reads them (it would raise TooManyFieldsSent: an
        # HTML page and a traceback in the log).
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        if limit is not None and query_string.count("&") + 1 > limit:
            return _bad_request(request, f"The query string holds more than {limit} parameters.")
        if not request.path.startswith("/api/") and any("\x00" in value for value in request.GET.values()):
            return _bad_request(request, "A query parameter holds a NUL character, which no memory can contain.")
        return self.get_response(request)


def _bad_request(request: HttpRequest, message: str) -> HttpResponse:
    if request.path.startswith("/api/") or request.path.startswith("/mcp"):
        return JsonResponse({"detail": message}, status=400)
    return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


# The Content-Security-Policy of each part of the site. The dashboard has no scripts at all; the
# admin, the API's docs page and the browsable API run only scripts served by the hub itself.
CSP_DASHBOARD = (
    "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
CSP_OWN_SCRIPTS = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
OWN_SCRIPT_PREFIXES = ("/admin/", "/api/")


class SecurityHeadersMiddleware:
    """A Content-Security-Policy on every page, and `Cache-Control: no-store` on every answer that is not
    a static file: pages and API answers show tokens and memory values, which no shared or browser
    cache should keep. An answer that sets its own Cache-Control keeps it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            own_scripts = request.path.startswith(OWN_SCRIPT_PREFIXES)
            response["Content-Security-Policy"] = CSP_OWN_SCRIPTS if own_scripts else CSP_DASHBOARD
        if "Cache-Control" not in response:
            response["Cache-Control"] = "private, no-store"
        return response


Message = MutableMapping[str, Any]
ASGIApp = Callable[[Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


def asgi_body_limit(app: Callable[..., Awaitable[None]]) -> ASGIApp:
    """Wrap an ASGI application so that no request body beyond MEMORYHUB_MAX_BODY_BYTES is read whole.

    Under ASGI the server streams the body and Django spools all of it before any middleware runs,
    whatever Content-Length says (and a chunked body says nothing). This answers 413 at once to a body declared
    over the limit, reads at most the limit plus one byte of any other, answers 413 past it, and hands the
    application the body it read. A body sent without a
    Content-Length (chunked) is handed on with one, its size as read: the REST framework reads no body
    from a request that declares none.
    """

    async def limited(
        scope: Message, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
    ) -> None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if scope["type"] != "http" or limit is None:
            await app(scope, receive, send)
            return

        async def refuse() -> None:
            body = json.dumps(
                {"detail": f"The request body is over the limit of {limit} bytes (MEMORYHUB_MAX_BODY_BYTES)."}
            ).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 413, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        # A body declared over the limit is refused before any of it is read (the client would otherwise be
        # answered only once it had sent the limit's worth, or never, had it sent less than it declared).
        declared = [value for name, value in scope.get("headers", []) if name.lower() == b"content-length"]
        length = declared[0].strip() if declared else b""
        declared_size = plain_whole_number(length.decode()) if length.isdigit() else 0
        if declared_size is None or declared_size > limit:  # None: more digits than any size has
            await refuse()
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > limit:
                await refuse()
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        headers = scope.get("headers", [])
        if size and not any(name.lower() == b"content-length" for name, _ in headers):
            scope = {**scope, "headers": [*headers, (b"content-length", str(size).encode())]}
        await app(scope, replay, send)

    return limited


class LoginThrottleMiddleware:
    """Answers a login attempt of a locked-out username and address (memories.logins) with 429 before the
    login view checks any password; the dashboard's and the admin's login forms both pass here."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path in (reverse("dashboard:login"), reverse("admin:login")):
            from memories import logins  # the models are ready by the first request

            username = request.POST.get("username", "")
            until = logins.login_locked_until(username=username, address=logins.client_address(request))
            if until is not None:
                seconds = max(1, math.ceil((until - timezone.now()).total_seconds()))
                context = {"minutes": math.ceil(seconds / 60), "login_url": request.path}
                response = render(request, "registration/locked.html", context, status=429)
                response["Retry-After"] = str(seconds)
                return response
        return self.get_response(request)


# What WhiteNoise reads when it builds its table of static files: the table is one per set of these.
STATIC_TABLE_SETTINGS = (
    "DEBUG",
    "STATIC_URL",
    "STATIC_ROOT",
    "FORCE_SCRIPT_NAME",
    "STATICFILES_DIRS",
    "STATICFILES_FINDERS",
    "INSTALLED_APPS",
    "STORAGES",
    "WHITENOISE_AUTOREFRESH",
    "WHITENOISE_MAX_AGE",
    "WHITENOISE_ALLOW_ALL_ORIGINS",
    "WHITENOISE_CHARSET",
    "WHITENOISE_MIMETYPES",
    "WHITENOISE_ADD_HEADERS_FUNCTION",
    "WHITENOISE_INDEX_FILE",
    "WHITENOISE_IMMUTABLE_FILE_TEST",
    "WHITENOISE_USE_FINDERS",
    "WHITENOISE_STATIC_PREFIX",
    "WHITENOISE_ROOT",
)


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise's middleware, serving the static files, with its table of them built once per process.

    WhiteNoise lists every static file, stats it and works out its headers each time the middleware
    is made: once per server process, as the table is kept for, but once per client in tests, where
    Django's test client builds the middleware for every client it makes (a fifth of the suite's
    time). The table depends only on STATIC_TABLE_SETTINGS and on the files on disk when it is built,
    which a running server never looks at again either; with autorefresh, WhiteNoise looks files up
    at each request and keeps no table.
    """

    _tables: ClassVar[dict[str, dict[str, Any]]] = {}

    def add_files(self, root: str, prefix: str | None = None) -> None:
        self._add_table(f"root {root} {prefix}", lambda: super(StaticFilesMiddleware, self).add_files(root, prefix))

    def add_files_from_finders(self) -> None:
        self._add_table("finders", lambda: super(StaticFilesMiddleware, self).add_files_from_finders())

    def _add_table(self, source: str, build: Callable[[], None]) -> None:
        if self.autorefresh:
            build()
            return
        key = repr((source, *(getattr(settings, name, None) for name in STATIC_TABLE_SETTINGS)))
        table = self._tables.get(key)
        if table is None:
            kept, self.files = self.files, {}
            try:
                build()
                table = self._tables[key] = self.files
            finally:
                self.files = {**kept, **self.files}
            return
        self.files.update(table)
