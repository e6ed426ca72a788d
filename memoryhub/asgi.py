"""ASGI entry point (`make serve`: gunicorn with uvicorn workers, memoryhub/gunicorn.conf.py): Django
for every path, except /mcp, which is the MCP server (memories.mcp.http)."""

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import django
from asgiref.sync import sync_to_async
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
django.setup(set_prefix=False)

# The shapes Django's ASGIHandler is declared with.
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]

UNLOGGED_PATHS = ("/healthz",)


class HubASGIHandler(ASGIHandler):
    """Django's ASGI handler, with every request's sync code on the worker's one sync thread, in one go.

    Django's own handler gives each request a thread of its own (a ThreadSensitiveContext), so a
    database connection, kept per thread, is opened for every request and never reused: CONN_MAX_AGE
    has no effect. Here all of a worker's views run, one at a time, on asgiref's single sync thread,
    as they would in a sync WSGI worker, and its connection lives across requests. The event loop
    still reads and writes every socket, so an idle or slow connection holds nothing up.
    """

    def __init__(self) -> None:
        # The middleware chain built for sync calls, entered once per request below. Built for
        # async calls (Django's way), each sync-only middleware hook and the view are each a hop
        # between the event loop and a thread: a dozen per request, most of what ASGI cost.
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django serves HTTP connections only, not {scope['type']}.")
        await self.handle(scope, receive, send)


class AccessLogFilter(logging.Filter):
    """The access log without query strings (a search's text is the agent's, not the log's) and
    without the health checks a load balancer makes every few seconds."""

    def filter(self, record: logging.LogRecord) -> bool:
        # uvicorn logs: client, method, path with query string, HTTP version, status.
        if not isinstance(record.args, tuple) or len(record.args) != 5:
            return True
        client, method, full_path, http_version, status_code = record.args
        path = str(full_path).split("?", 1)[0]
        if path in UNLOGGED_PATHS:
            return False
        record.args = (client, method, path, http_version, status_code)
        return True


logging.getLogger("uvicorn.access").addFilter(AccessLogFilter())
django_application = HubASGIHandler()
# Load every route's module now, while the worker boots, rather than in its first request.
get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf

# Imported once Django is set up: the MCP tools use the models.
from memories.mcp.http import with_mcp  # noqa: E402
from memoryhub.middleware import asgi_body_limit  # noqa: E402

# /mcp checks its bodies' size itself (memories.mcp.http), answering in JSON-RPC as an MCP client reads it.
application = with_mcp(asgi_body_limit(django_application))
