"""Optimistic concurrency over HTTP: an entry's ETag is its version; If-Match asks for that version.

GET answers with ETag: "N", and 304 (no body) when If-None-Match already names it. PUT, PATCH and
DELETE given If-Match: "N" change the entry only while it is at version N, else 412; If-Match: *
asks only that the entry exists. A restore given If-Match: "N" brings the entry back only when it
was deleted at version N (the ETag it last had). Tags compare as strings: "05" is not "5". Without
If-Match the last write wins. PUT given If-None-Match: * creates the entry only when there is none,
else 412; PUT, PATCH and DELETE given If-None-Match naming ETags are refused (412) when one is the
entry's; given both headers, If-None-Match is checked against the version If-Match asks for.
Versions never repeat for a key, even across a delete, so an ETag names one state forever.
"""

import re
from collections.abc import Callable

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from memories import selectors
from memories.accounts import request_account
from memories.models import MemoryEntry
from memories.services import ABSENT_VERSION
from memoryhub.api import PreconditionFailed
from memoryhub.numbers import MAX_DIGITS

# The one spelling of an entry's ETag: a version (1 or more) in quotes, with no leading zero.
# At most MAX_DIGITS digits: a version is no longer (a tag of thousands of digits is no version, as "abc" is none).
VERSION_TAG = re.compile(rf'"[1-9][0-9]{{0,{MAX_DIGITS - 1}}}"')

IF_MATCH_PARAMETER = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='The ETag of the version this change is based on (e.g. "3"), or * for any existing version. '
    "On a stale version the answer is 412 and nothing changes.",
)
IF_NONE_MATCH_PARAMETER = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="* to create the memory only when it does not exist yet: 412 when it does, and nothing changes.",
)
IF_NONE_MATCH_CHANGE_PARAMETER = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='ETags the memory must not be at (e.g. "3"), or * for any version: 412 when it is, and nothing '
    "changes.",
)
IF_NONE_MATCH_GET_PARAMETER = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='The ETag of the version already held (e.g. "3"): 304 with no body while the memory is at it.',
)
ETAG_HEADER = OpenApiParameter(
    "ETag",
    str,
    OpenApiParameter.HEADER,
    response=[200, 201],
    description='The entry\'s version as an entity tag, e.g. "3"; send it back in If-Match.',
)


def entry_etag(entry: MemoryEntry) -> str:
    return f'"{entry.version}"'


def with_etag(response: Response, entry: MemoryEntry) -> Response:
    response["ETag"] = entry_etag(entry)
    return response


def _tag_versions(tags: list[str]) -> set[int]:
    """The versions named by strong tags spelled exactly as the hub sends them: "5" names 5; "05", W/"5" nothing.

    Entity tags compare as strings (RFC 9110, 8.8.3.2), so a tag names a version only when it is the
    very text the hub would send for it; no version is 0 or below.
    """
    return {int(tag[1:-1]) for tag in tags if VERSION_TAG.fullmatch(tag)}


def _header_tags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def if_match_version(
    request: Request,
    *,
    uid: str,
    key: str,
    current_version: Callable[[], int | None] | None = None,
    absent: str = "The entry does not exist.",
    writes_entry: bool | None = None,
) -> int | None:
    """The version the request's If-Match header asks for; None when it has none.

    If-Match holding only weak or malformed tags can never match: that is a 412, as for a stale one (RFC 9110,
    13.1.1), whose message says what was wrong with them.
    Without If-Match, If-None-Match: * asks for ABSENT_VERSION: a PUT creates only, a PATCH or DELETE of an
    existing entry is a 412 (RFC 9110, 13.1.2: * matches any current entry); writes_entry says so of another method
    (a POST that stores the entry its body names), where * means nothing by default (a restore's). * and a list
    of several tags are matched against current_version() (the entry's version by default; a
    restore passes the version the entry was deleted at); absent is the 412's message when that is None.
    """
    header = request.headers.get("If-Match")
    if current_version is None:

        def current_version() -> int | None:
            entry = selectors.entry_get(owner=request_account(request), uid=uid, key=key)
            return entry.version if entry is not None else None

    writes = request.method in UNSAFE_METHODS if writes_entry is None else writes_entry
    if header is None:
        none_match = request.headers.get("If-None-Match", "").strip()
        if writes and none_match == "*":
            return ABSENT_VERSION
        if writes and none_match:
            return _unless_named(request, none_match, current_version)
        return None

    asked = _matched_version(header, current_version, absent)
    none_match = request.headers.get("If-None-Match", "").strip()
    if writes and none_match:
        # Both headers: If-None-Match is evaluated after If-Match held (RFC 9110, 13.2.2), against the
        # version the write will find, which is the one If-Match asked for.
        named = _tag_versions([tag.removeprefix("W/") for tag in _header_tags(none_match)])
        if none_match == "*" or asked in named:
            raise PreconditionFailed(f"If-None-Match names version {asked}, the one If-Match asks for.")
    return asked


def _matched_version(header: str, current_version: Callable[[], int | None], absent: str) -> int:
    """The version an If-Match header asks for (412 when it can name none)."""
    if header.strip() == "*":
        current = current_version()
        if current is None:
            raise PreconditionFailed(f"{absent.removesuffix('.')} (If-Match: *).")
        return current
    tags = _header_tags(header)
    versions = _tag_versions(tags)
    if len(versions) == 1:
        return versions.pop()
    if not versions:
        raise PreconditionFailed(_why_no_version(tags))
    # Several versions: the entry matches whichever it is at, so ask for the current one if listed.
    current = current_version()
    if current is None or current not in versions:
        raise PreconditionFailed(f"The entry is at version {current}." if current else absent)
    return current


def _why_no_version(tags: list[str]) -> str:
    """Why an If-Match header's tags name no version, and the form that does: the 412's message."""
    if not tags:
        return "If-Match is empty: send the ETag as the ETag header gave it, or * for any existing version."
    if any(tag.startswith("W/") for tag in tags):
        return (
            'If-Match compares ETags strongly: a weak one (W/"...") never matches. Send the ETag as the ETag header '
            "gave it, in double quotes without W/."
        )
    if any(not (len(tag) >= 2 and tag.startswith('"') and tag.endswith('"')) for tag in tags):
        return (
            "If-Match takes ETags in double quotes, as the ETag header gives them: a value without its quotes "
            "never matches."
        )
    return (
        "If-Match holds no ETag the hub gives: an entry's ETag is its version in double quotes, without leading "
        "zeros, as the ETag header gives it."
    )


# The writes that If-None-Match naming ETags makes conditional (RFC 9110, 13.1.2).
UNSAFE_METHODS = ("PUT", "PATCH", "DELETE")


def _unless_named(request: Request, header: str, current_version: Callable[[], int | None]) -> int | None:
    """A write's If-None-Match naming ETags (compared weakly): 412 when one is the entry's, else the version
    the write must still find (the version seen; for a PUT of a missing entry, none), so a concurrent change
    in between is a 412 too."""
    named = _tag_versions([tag.removeprefix("W/") for tag in _header_tags(header)])
    current = current_version()
    if current is not None and current in named:
        raise PreconditionFailed(f"The entry is at version {current}, which If-None-Match names.")
    if current is None:
        return ABSENT_VERSION if request.method == "PUT" else None
    return current


def if_none_match_holds(request: Request, etag: str) -> bool:
    """Whether the request's If-None-Match names etag (or is *): a GET then answers 304.

    If-None-Match compares weakly (RFC 9110, 13.1.2): W/"3" names "3" as well.
    """
    header = request.headers.get("If-None-Match")
    if header is None:
        return False
    tags = _header_tags(header)
    return "*" in tags or etag in {tag.removeprefix("W/") for tag in tags}
