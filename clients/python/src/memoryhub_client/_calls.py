"""Every API call, built once: its method, path, parameters, body and how to read the answer.

MemoryHub and AsyncMemoryHub call these and send what they return; neither builds a path itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import httpx

from memoryhub_client._core import Call, segment
from memoryhub_client.errors import InvalidArgument, WriteHeld
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

Version = int | str | Entry


def if_match_value(version: Version) -> str:
    """If-Match for a version given as 3, "3", '"3"', '*' or the Entry itself."""
    if isinstance(version, Entry):
        return version.etag
    if isinstance(version, bool):
        raise InvalidArgument("if_match takes a version, an ETag or an Entry, not a bool.")
    if isinstance(version, int) or version.isdigit():
        return f'"{version}"'
    return version


def _memories(uid: str) -> str:
    return f"/users/{segment(uid, name='uid')}/memories/"


def _memory(uid: str, key: str) -> str:
    return f"/users/{segment(uid, name='uid')}/memories/{segment(key, name='key')}"


def _entry(response: httpx.Response) -> Entry:
    return Entry.from_json(response.json(), etag=response.headers.get("ETag"))


def _written(response: httpx.Response) -> Entry:
    """The entry a put or update stored; WriteHeld when the hub's write guard held the write (202)."""
    if response.status_code == 202:
        raise WriteHeld(HeldWrite.from_json(response.json()), location=response.headers.get("Location"))
    return _entry(response)


def _nothing(response: httpx.Response) -> None:
    return None


def entry_put(
    uid: str,
    key: str,
    value: str,
    *,
    kind: str | None,
    meta: dict[str, Any] | None,
    if_match: Version | None,
    create_only: bool,
    privacy: str | None = None,
    ttl: int | None = None,
    expires: datetime | None = None,
    clear_expiry: bool = False,
) -> Call[Entry]:
    body: dict[str, Any] = {"value": value, **_expiry(ttl, expires, clear_expiry)}
    if kind is not None:
        body["kind"] = kind
    if meta is not None:
        body["meta"] = meta
    if privacy is not None:
        body["privacy"] = privacy
    if if_match is not None and create_only:
        raise InvalidArgument(
            "if_match and create_only exclude each other: one asks for a version, the other for none."
        )
    if "/" in key:
        # A key holding '/' cannot be a path segment: the hub takes it in the body of a POST (an upsert).
        if if_match is not None or create_only:
            raise InvalidArgument(f"key {key!r} holds '/': it can be stored, but not conditionally.")
        return Call("POST", _memories(uid), _written, body={"key": key, **body})
    headers = {}
    if if_match is not None:
        headers["If-Match"] = if_match_value(if_match)
    if create_only:
        headers["If-None-Match"] = "*"
    # A conditional put sent again after its answer was lost would find its own write and answer 412: not retried.
    return Call("PUT", _memory(uid, key), _written, body=body, headers=headers, idempotent=not headers)


def _expiry(ttl: int | None, expires: datetime | None, clear_expiry: bool) -> dict[str, Any]:
    """A write's expiry fields: ttl seconds from now, an expires time (aware), or none at all (clear_expiry); left
    out, the memory keeps its expiry."""
    if sum((ttl is not None, expires is not None, clear_expiry)) > 1:
        raise InvalidArgument("ttl, expires and clear_expiry exclude each other: give one of them.")
    if expires is not None:
        if expires.tzinfo is None:
            raise InvalidArgument("expires must be an aware datetime (with its time zone), e.g. datetime.now(UTC).")
        return {"expires": expires.isoformat()}
    if clear_expiry:
        return {"expires": None}
    return {"ttl": ttl} if ttl is not None else {}


def _whole_from_1(name: str, number: object, what: str = "") -> int:
    """number when it is a whole number of at least 1 (not a bool), else InvalidArgument naming it."""
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise InvalidArgument(f"{name} must be {what}a whole number of at least 1; got {number!r}.")
    return number


def held_get(held_id: int) -> Call[HeldWrite]:
    held_id = _whole_from_1("held_id", held_id, "a held write's number, ")
    return Call("GET", f"/held/{held_id}", lambda response: HeldWrite.from_json(response.json()))


def search_limit(limit: int) -> int:
    """A search's limit, the page size it asks for: a whole number of at least 1."""
    return _whole_from_1("limit", limit)


def entry_get(uid: str, key: str) -> Call[Entry]:
    return Call("GET", _memory(uid, key), _entry)


def entry_update(
    uid: str,
    key: str,
    *,
    value: str | None,
    kind: str | None,
    meta: dict[str, Any] | None,
    if_match: Version | None,
    privacy: str | None = None,
    ttl: int | None = None,
    expires: datetime | None = None,
    clear_expiry: bool = False,
) -> Call[Entry]:
    fields = (("value", value), ("kind", kind), ("meta", meta), ("privacy", privacy))
    body = {name: given for name, given in fields if given is not None} | _expiry(ttl, expires, clear_expiry)
    headers = {"If-Match": if_match_value(if_match)} if if_match is not None else {}
    # Setting fields to given values twice leaves the entry as once: safe to retry, unless it names the version
    # the first one moved on from (412).
    return Call("PATCH", _memory(uid, key), _written, body=body, headers=headers, idempotent=not headers)


def entry_delete(uid: str, key: str, *, if_match: Version | None) -> Call[None]:
    headers = {"If-Match": if_match_value(if_match)} if if_match is not None else {}
    # Sent again after its answer was lost, a delete finds nothing to delete (404): not retried.
    return Call("DELETE", _memory(uid, key), _nothing, headers=headers, idempotent=False)


def entry_list(
    uid: str,
    *,
    query_text: str | None,
    kind: str | None,
    match: str | None,
    page: int,
    page_size: int | None,
    meta: dict[str, Any] | None = None,
    kinds: Sequence[str] | None = None,
    include_expired: bool = False,
) -> Call[PageData[Entry]]:
    def parse(response: httpx.Response) -> PageData[Entry]:
        ranking = response.headers.get("X-MemoryHub-Ranking")
        return PageData.from_json(response.json(), number=page, item=Entry.from_json, ranking=ranking)

    params: dict[str, Any] = {"q": query_text or None, "kind": kind, "match": match, "page": page}
    params["page_size"] = page_size
    params["kind__in"] = ",".join(kinds) if kinds else None
    params["include_expired"] = "1" if include_expired else None
    for name, wanted in (meta or {}).items():
        # {"project": "apollo"} is ?meta.project=apollo; a list of values is ?meta.project__in=a,b.
        if isinstance(wanted, list | tuple):
            params[f"meta.{name}__in"] = ",".join(_filter_text(value) for value in wanted)
        else:
            params[f"meta.{name}"] = _filter_text(wanted)
    return Call("GET", _memories(uid), parse, params=params)


def _filter_text(value: object) -> str:
    """A meta filter's value as the query string carries it (the hub matches "3" to 3 and "true" to true)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def entry_history(uid: str, key: str, *, page: int, page_size: int | None) -> Call[PageData[Event]]:
    def parse(response: httpx.Response) -> PageData[Event]:
        return PageData.from_json(response.json(), number=page, item=Event.from_json)

    return Call("GET", _memory(uid, key) + "/history", parse, params={"page": page, "page_size": page_size})


def entry_restore(uid: str, key: str) -> Call[Entry]:
    # A second restore of the same key answers 409: not retried after a lost connection.
    return Call("POST", _memory(uid, key) + "/restore", _entry, idempotent=False)


def entries_batch(uid: str, operations: Sequence[BatchOperation]) -> Call[list[BatchOutcome]]:
    def parse(response: httpx.Response) -> list[BatchOutcome]:
        return [BatchOutcome.from_json(outcome) for outcome in response.json()["results"]]

    body = {"operations": [operation.to_json() for operation in operations]}
    return Call("POST", _memories(uid) + "batch", parse, body=body, idempotent=False)


def user_list(*, search: str | None, page: int, page_size: int | None) -> Call[PageData[UserSummary]]:
    def parse(response: httpx.Response) -> PageData[UserSummary]:
        return PageData.from_json(response.json(), number=page, item=UserSummary.from_json)

    return Call("GET", "/users/", parse, params={"search": search or None, "page": page, "page_size": page_size})


def user_forget(uid: str, *, erase: bool = False) -> Call[int]:
    def parse(response: httpx.Response) -> int:
        return int(response.json()["deleted"])

    params = {"erase": "1"} if erase else None
    # As a delete: sent again, it finds no user (404).
    return Call("DELETE", f"/users/{segment(uid, name='uid')}", parse, params=params, idempotent=False)


def info() -> Call[Info]:
    return Call("GET", "/info", lambda response: Info.from_json(response.json()))


def sync_status() -> Call[SyncStatus]:
    return Call("GET", "/sync/status", lambda response: SyncStatus.from_json(response.json()))


def evaluation_list(*, page: int, page_size: int | None) -> Call[PageData[EvaluationRun]]:
    def parse(response: httpx.Response) -> PageData[EvaluationRun]:
        return PageData.from_json(response.json(), number=page, item=EvaluationRun.from_json)

    return Call("GET", "/evaluations/", parse, params={"page": page, "page_size": page_size})


def context(uid: str, *, query_text: str | None, budget: int | None, previous: Context | None) -> Call[Context]:
    def parse(response: httpx.Response) -> Context:
        if response.status_code == 304 and previous is not None:
            return previous
        return Context.from_json(response.json(), etag=response.headers.get("ETag"))

    headers = {"If-None-Match": previous.etag} if previous is not None and previous.etag else {}
    params = {"q": query_text or None, "budget": budget}
    return Call("GET", f"/users/{segment(uid, name='uid')}/context", parse, params=params, headers=headers)
