"""MemoryHub: the blocking client. Every call is built in _calls and decided in _core; this only sends."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from memoryhub_client import _calls, _core
from memoryhub_client._calls import Version
from memoryhub_client.models import (
    BatchOperation,
    BatchOutcome,
    Context,
    Entry,
    EvaluationRun,
    Event,
    HeldWrite,
    Info,
    PageData,
    SyncStatus,
    UserSummary,
)
from memoryhub_client.pagination import Page

T = TypeVar("T")

__all__ = ["MemoryHub"]


class MemoryHub:
    """A MemoryHub's API, for one account (its token).

    base_url is the hub's address (default $MEMORYHUB_URL, else http://127.0.0.1:8000) and token the
    account's API token (default $MEMORYHUB_TOKEN). Each request waits at most `timeout` seconds per
    phase; a 429 or 503 is retried up to `max_retries` times, after the hub's Retry-After or an
    exponential backoff from `backoff` seconds (a Retry-After above `max_retry_wait` is raised as
    RateLimited at once). Errors are the exceptions of memoryhub_client.errors.

    Use it as a context manager, or call close(), to release its connections.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = _core.DEFAULT_TIMEOUT,
        max_retries: int = _core.DEFAULT_MAX_RETRIES,
        backoff: float = _core.DEFAULT_BACKOFF,
        max_retry_wait: float = _core.DEFAULT_MAX_RETRY_WAIT,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._settings = _core.Settings.from_arguments(
            base_url, token, timeout=timeout, max_retries=max_retries, backoff=backoff, max_retry_wait=max_retry_wait
        )
        arguments = self._settings.client_arguments()
        if http_client is None:
            self._http = httpx.Client(**arguments)
            self._owns_http = True
        else:
            http_client.base_url = arguments["base_url"]
            http_client.headers.update(arguments["headers"])
            self._http = http_client
            self._owns_http = False

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _send(self, call: _core.Call[T]) -> T:
        attempt = 0
        while True:
            request = _core.build_request(self._http, call)
            try:
                response = self._http.send(request)
            except httpx.TransportError as error:
                delay = _core.delay_after_error(self._settings, call, attempt, error)
                if delay is None:
                    raise _core.connection_error(self._settings, error, call) from error
            else:
                delay = _core.delay_after_response(self._settings, call, attempt, response)
                if delay is None:
                    return _core.answer(call, response)
                response.close()
            time.sleep(delay)
            attempt += 1

    def _page(self, call_for_page: Callable[[int], _core.Call[PageData[T]]], number: int) -> Page[T]:
        return Page(self._send(call_for_page(number)), lambda following: self._page(call_for_page, following))

    # Entries

    def put(
        self,
        uid: str,
        key: str,
        value: str,
        *,
        kind: str | None = None,
        meta: dict[str, Any] | None = None,
        if_match: Version | None = None,
        create_only: bool = False,
        privacy: str | None = None,
        ttl: int | None = None,
        expires: datetime | None = None,
        clear_expiry: bool = False,
    ) -> Entry:
        """Store a memory (create or replace its value). kind, meta and privacy left out keep the entry's
        (a new one takes the account's default privacy; "local" never leaves the hub). ttl: seconds until
        it expires (then no read shows it), or expires an aware datetime, or clear_expiry True for none; all left out,
        the entry keeps its expiry (a new one never expires).

        if_match (a version, an ETag or an Entry) writes only while the memory is at that version;
        create_only writes only when there is no such memory; either raises PreconditionFailed otherwise.
        A value the hub's write guard holds for review (the account's guard mode is hold) raises WriteHeld,
        with the held write: nothing is stored until staff approve it.
        """
        return self._send(
            _calls.entry_put(
                uid,
                key,
                value,
                kind=kind,
                meta=meta,
                if_match=if_match,
                create_only=create_only,
                privacy=privacy,
                ttl=ttl,
                expires=expires,
                clear_expiry=clear_expiry,
            )
        )

    def get(self, uid: str, key: str) -> Entry:
        """One memory, with its version (`entry.etag` is the hub's ETag); NotFound when there is none."""
        return self._send(_calls.entry_get(uid, key))

    def update(
        self,
        uid: str,
        key: str,
        *,
        value: str | None = None,
        kind: str | None = None,
        meta: dict[str, Any] | None = None,
        if_match: Version | None = None,
        privacy: str | None = None,
        ttl: int | None = None,
        expires: datetime | None = None,
        clear_expiry: bool = False,
    ) -> Entry:
        """Change some fields of an existing memory (PATCH; ttl or expires sets a new expiry, clear_expiry removes
        it); NotFound when there is none.

        A value the hub's write guard holds for review raises WriteHeld, as for put: the memory stays as it was.
        """
        return self._send(
            _calls.entry_update(
                uid,
                key,
                value=value,
                kind=kind,
                meta=meta,
                if_match=if_match,
                privacy=privacy,
                ttl=ttl,
                expires=expires,
                clear_expiry=clear_expiry,
            )
        )

    def delete(self, uid: str, key: str, *, if_match: Version | None = None) -> None:
        """Delete a memory (its history stays); NotFound when there is none."""
        self._send(_calls.entry_delete(uid, key, if_match=if_match))

    def entries(
        self,
        uid: str,
        *,
        q: str | None = None,
        kind: str | None = None,
        match: str | None = None,
        page_size: int | None = None,
        page: int = 1,
        meta: dict[str, Any] | None = None,
        kinds: Sequence[str] | None = None,
        include_expired: bool = False,
    ) -> Page[Entry]:
        """A user's memories, newest first; with q, those whose key or value holds it, best match first.

        meta ({"project": "apollo"}, or a list of values for any of them) keeps those whose top-level meta
        fields equal it; kinds keeps those of these kinds; include_expired adds the expired ones not yet deleted.

        Iterate the page for every memory from there on (pages are fetched as needed).
        """
        return self._page(
            lambda number: _calls.entry_list(
                uid,
                query_text=q,
                kind=kind,
                match=match,
                page=number,
                page_size=page_size,
                meta=meta,
                kinds=kinds,
                include_expired=include_expired,
            ),
            page,
        )

    def search(
        self, uid: str, q: str, *, kind: str | None = None, limit: int = 10, meta: dict[str, Any] | None = None
    ) -> list[Entry]:
        """The `limit` memories that best match q (ranked by the hub), in one request."""
        return self.entries(uid, q=q, kind=kind, page_size=_calls.search_limit(limit), meta=meta).items[:limit]

    def history(self, uid: str, key: str, *, page_size: int | None = None) -> Page[Event]:
        """Every change to a memory, newest first; NotFound when it never existed."""
        return self._page(lambda number: _calls.entry_history(uid, key, page=number, page_size=page_size), 1)

    def restore(self, uid: str, key: str) -> Entry:
        """Bring a deleted memory back from its history; NotFound with nothing to restore, Conflict when it exists."""
        return self._send(_calls.entry_restore(uid, key))

    def batch(self, uid: str, operations: Sequence[BatchOperation]) -> list[BatchOutcome]:
        """Apply up to 500 puts and deletes in order, all or none (BadRequest names each bad operation).

        A put the hub's write guard holds for review is an outcome of status "held" (its `held` is the held
        write) and the other operations are applied.
        """
        return self._send(_calls.entries_batch(uid, operations))

    # Users

    def users(self, *, search: str | None = None, page_size: int | None = None) -> Page[UserSummary]:
        """The uids this account holds memories about, with their counts."""
        return self._page(lambda number: _calls.user_list(search=search, page=number, page_size=page_size), 1)

    def forget(self, uid: str, *, erase: bool = False) -> int:
        """Delete every memory about a user (the history stays); returns how many; NotFound when none.

        erase=True, for a request to be forgotten: the history and Honcho's copies go too (one record
        of the erasure stays); NotFound when the hub knows nothing of the user.
        """
        return self._send(_calls.user_forget(uid, erase=erase))

    # The hub

    def held(self, held_id: int) -> HeldWrite:
        """A write the guard held (WriteHeld's `held.id`): pending, approved (its `entry_version` the memory's
        version it stored) or rejected, with who decided and when; NotFound for another account's."""
        return self._send(_calls.held_get(held_id))

    def info(self) -> Info:
        return self._send(_calls.info())

    def sync_status(self) -> SyncStatus:
        return self._send(_calls.sync_status())

    def evaluations(self, *, page_size: int | None = None) -> Page[EvaluationRun]:
        """Stored evaluation runs, newest first."""
        return self._page(lambda number: _calls.evaluation_list(page=number, page_size=page_size), 1)

    def context(
        self, uid: str, *, q: str | None = None, budget: int | None = None, previous: Context | None = None
    ) -> Context:
        """The block of memories an agent should see this turn, at most `budget` characters (hub default 2,200).

        Given the previous turn's Context, the hub answers 304 while nothing changed, and `previous`
        itself is returned.
        """
        return self._send(_calls.context(uid, query_text=q, budget=budget, previous=previous))
