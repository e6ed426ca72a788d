"""The double as a whole: its state, its faults, and the two ways to reach it (in process, or HTTP)."""

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from honcho_double.api import HonchoState, Reply
from honcho_double.faults import Fault, FaultPlan

IN_PROCESS_BASE_URL = "http://honcho.test"
UNAUTHORIZED_BODY = {"detail": "Invalid API key"}
SERVER_ERROR_BODY = {"detail": "Internal Server Error"}
RATE_LIMITED_BODY = {"detail": "Rate limit exceeded"}
# How often the serving loop looks whether it was told to stop: stop() waits for it (at most this long).
STOP_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Call:
    """One request the double received, and how it ended (status 0: no reply was sent)."""

    method: str
    path: str
    query: dict[str, str]
    body: object
    status: int
    fault: Fault | None


class HonchoDouble:
    """A Honcho server in memory.

    api_key: when set, a request without `Authorization: Bearer <api_key>` answers 401.
    timeout_delay: over HTTP, how long a TIMEOUT fault holds the request before closing it
    (in process, a TIMEOUT raises httpx.ReadTimeout at once, with no waiting).
    retry_after: the seconds a RATE_LIMITED answer asks the client to wait (its Retry-After header).
    latency: seconds every call waits before it is answered (a slow Honcho); may be changed while serving.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        faults: FaultPlan | None = None,
        timeout_delay: float = 30.0,
        retry_after: float = 1.0,
        latency: float = 0.0,
    ) -> None:
        self.state = HonchoState()
        self.faults = faults or FaultPlan()
        self.api_key = api_key
        self.timeout_delay = timeout_delay
        self.retry_after = retry_after
        self.latency = latency
        self.calls: list[Call] = []
        self._calls_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # What tests look at ---------------------------------------------------------------------

    def sessions(self, workspace_id: str) -> list[dict[str, Any]]:
        """The live sessions of a workspace as JSON, each with its messages under "messages"."""
        return [
            {**session.as_json(), "messages": list(session.messages)} for session in self.state.sessions(workspace_id)
        ]

    def purge(self) -> int:
        """Finish the deletes Honcho accepted with 202 (its background worker)."""
        return self.state.purge()

    def calls_to(self, method: str, path_suffix: str) -> list[Call]:
        with self._calls_lock:
            return [call for call in self.calls if call.method == method and call.path.endswith(path_suffix)]

    # The one place a request is answered ------------------------------------------------------

    def answer(
        self, method: str, path: str, query: dict[str, str], body: object, authorization: str | None
    ) -> tuple[Reply | None, Fault | None]:
        """The reply to one request, and the fault applied to it (a None reply: send nothing)."""
        if self.latency:
            time.sleep(self.latency)
        fault = self.faults.next_fault()
        reply: Reply | None
        if fault in (Fault.UNREACHABLE, Fault.TIMEOUT):
            reply = None
        elif fault is Fault.UNAUTHORIZED or (self.api_key and authorization != f"Bearer {self.api_key}"):
            reply = Reply(401, UNAUTHORIZED_BODY)
        elif fault is Fault.SERVER_ERROR:
            reply = Reply(500, SERVER_ERROR_BODY)
        elif fault is Fault.RATE_LIMITED:
            reply = Reply(429, RATE_LIMITED_BODY)
        else:
            reply = self.state.handle(method, path, query, body)
            if fault is Fault.DROPPED_CONNECTION:
                reply = None
        with self._calls_lock:
            self.calls.append(Call(method, path, query, body, reply.status if reply else 0, fault))
        return reply, fault

    # In process -------------------------------------------------------------------------------

    def headers_for(self, reply: Reply) -> dict[str, str]:
        return {"Retry-After": f"{self.retry_after:g}"} if reply.status == 429 else {}

    def _handle_httpx(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        query = dict(parse_qsl(request.url.query.decode()))
        reply, fault = self.answer(request.method, request.url.path, query, body, request.headers.get("authorization"))
        if fault is Fault.UNREACHABLE:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        if fault is Fault.TIMEOUT:
            raise httpx.ReadTimeout("timed out", request=request)
        if reply is None:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return httpx.Response(reply.status, json=reply.body, headers=self.headers_for(reply), request=request)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self._handle_httpx)

    def http_client(self, base_url: str = IN_PROCESS_BASE_URL) -> httpx.Client:
        """An httpx client answered by this double, for `Honcho(http_client=...)`."""
        return httpx.Client(base_url=base_url, transport=self.transport())

    # Over HTTP on 127.0.0.1 -----------------------------------------------------------------------

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start answering HTTP on host:port (0: any free port) in a thread; returns the base URL."""
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without this, Nagle's algorithm and delayed
            # ACKs add ~40 ms to every call, which would be the double's latency, not Honcho's.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                """Quiet: the double's own call log is the record."""

            def _respond(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    self._send(
                        Reply(
                            422,
                            {
                                "detail": [
                                    {"type": "json_invalid", "loc": ["body"], "msg": "JSON decode error", "input": {}}
                                ]
                            },
                        )
                    )
                    return
                parts = urlsplit(self.path)
                reply, fault = double.answer(
                    self.command, parts.path, dict(parse_qsl(parts.query)), body, self.headers.get("Authorization")
                )
                if fault is Fault.TIMEOUT:
                    time.sleep(double.timeout_delay)
                if reply is None:
                    self.close_connection = True
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                payload = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in double.headers_for(reply).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _respond

        server = ThreadingHTTPServer((host, port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(STOP_POLL_SECONDS,), name="honcho-double", daemon=True
        )
        self._thread.start()
        bound_host, bound_port = server.server_address[:2]
        if isinstance(bound_host, bytes):
            bound_host = bound_host.decode()
        return f"http://{bound_host}:{bound_port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @contextlib.contextmanager
    def running(self, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
        """Serve over HTTP for the duration of a with-block; yields the base URL."""
        base_url = self.serve(host, port)
        try:
            yield base_url
        finally:
            self.stop()

    def wait_forever(self) -> None:
        """Block until stopped (for `python -m honcho_double`)."""
        if self._thread is not None:
            self._thread.join()
