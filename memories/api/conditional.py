"""Optimistic concurrency over HTTP: an entry's ETag is its version; If-Match asks for that version.

GET answers with ETag: "N". PUT, PATCH, DELETE and restore given If-Match: "N" change the entry only
while it is at version N, else 412; If-Match: * asks only that the entry exists. Without If-Match
the last write wins. PUT given If-None-Match: * creates the entry only when there is none, else 412.
"""

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from memories import selectors
from memories.accounts import request_account
from memories.models import MemoryEntry
from memories.services import ABSENT_VERSION
from memoryhub.api import PreconditionFailed

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


def if_match_version(request: Request, *, uid: str, key: str) -> int | None:
    """The version the request's If-Match header asks for; None when it has none.

    If-Match holding only weak or malformed tags can never match: that is a 412, as for a stale one.
    Without If-Match, a PUT's If-None-Match: * asks for ABSENT_VERSION (create only).
    """
    header = request.headers.get("If-Match")
    if header is None:
        if request.method == "PUT" and request.headers.get("If-None-Match", "").strip() == "*":
            return ABSENT_VERSION
        return None
    if header.strip() == "*":
        entry = selectors.entry_get(owner=request_account(request), uid=uid, key=key)
        if entry is None:
            raise PreconditionFailed("The entry does not exist (If-Match: *).")
        return entry.version
    tags = [tag.strip() for tag in header.split(",") if tag.strip()]
    versions = {
        int(tag[1:-1])
        for tag in tags
        if len(tag) > 2 and tag[0] == tag[-1] == '"' and tag[1:-1].isascii() and tag[1:-1].isdigit()
    }
    if len(versions) == 1:
        return versions.pop()
    if not versions:
        raise PreconditionFailed('If-Match must hold the entry\'s ETag, such as "3".')
    # Several versions: the entry matches whichever it is at, so ask for the current one if listed.
    entry = selectors.entry_get(owner=request_account(request), uid=uid, key=key)
    if entry is None or entry.version not in versions:
        raise PreconditionFailed(f"The entry is at version {entry.version}." if entry else "The entry does not exist.")
    return entry.version
