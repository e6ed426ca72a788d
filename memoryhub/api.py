"""The API plumbing that both apps share: errors, pagination, the JSON parser and the rate limit.

REST_FRAMEWORK in settings names the classes here. rest_framework.views imports this module while it
loads (for the default throttle), so nothing here imports rest_framework.views at import time.
"""

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from django.conf import settings
from django.db import OperationalError, connection
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.exceptions import ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.utils.urls import remove_query_param, replace_query_param

from memories.search import HybridMatches, LexicalMatches, RankedMatches, ShownMatches
from memories.selectors import EntryListing
from memories.services import BatchRejected, EntryExists, EntryNotFound, VersionConflict
from memories.validation import MAX_ROW_OFFSET, UNSTORABLE_CHARACTERS, InvalidField
from memoryhub.numbers import MAX_DIGITS, plain_whole_number
from memoryhub.ratelimit import parse_rate, rate_window

if TYPE_CHECKING:
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_detail = "The entry has changed since the version given in If-Match."
    default_code = "precondition_failed"


class DatabaseBusy(exceptions.APIException):
    """The database rolled the request back for now (a deadlock or serialization failure, a lock held past the busy
    timeout): 503 with Retry-After, and nothing was written, so any request may be sent again as it was."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = (
        "The database was busy with another request's change and rolled this one back (a deadlock, or a lock held "
        "past the busy timeout): nothing was written. Try again."
    )
    default_code = "database_busy"
    # Seconds, as Retry-After (DRF's handler sends an exception's wait in that header).
    wait = 1


class DatabaseUnreachable(exceptions.APIException):
    """The database could not be reached, or the connection to it broke: 503 with Retry-After; a change the request
    asked for may or may not have been made (a connection lost at the commit says nothing of it)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = (
        "The database could not be reached, or the connection to it broke: a change this request asked for may or "
        "may not have been made. Read it before sending the change again."
    )
    default_code = "database_unreachable"
    wait = 1


# SQLite's OperationalErrors of a database busy for now, and of one that cannot be opened. (Its others, "no such
# table" or an I/O error among them, are the hub's or the machine's to fix, not the client's to wait out.)
SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")
SQLITE_UNREACHABLE = ("unable to open database",)
# PostgreSQL's SQLSTATEs of a connection gone (class 08, and the server shutting down or starting: 57P01 to 57P03).
POSTGRES_UNREACHABLE_CLASSES = ("08",)
POSTGRES_UNREACHABLE_STATES = frozenset({"57P01", "57P02", "57P03"})


def database_unavailable(error: Exception) -> type[DatabaseBusy | DatabaseUnreachable] | None:
    """What a database error tells the client: DatabaseBusy when the database rolled the request back for now
    (class 40 on PostgreSQL, a lock on SQLite), DatabaseUnreachable when it could not be reached or the connection
    broke, None for any other error (a 500: a statement timeout, a full disk, a missing table)."""
    if not isinstance(error, OperationalError):
        return None
    if connection.vendor == "sqlite":
        message = str(error).lower()
        if message.startswith(SQLITE_BUSY):
            return DatabaseBusy
        return DatabaseUnreachable if message.startswith(SQLITE_UNREACHABLE) else None
    # psycopg's error, under Django's: its SQLSTATE; none when no server answered (the connection failed or broke).
    state = getattr(error.__cause__, "sqlstate", None)
    if state is None or state.startswith(POSTGRES_UNREACHABLE_CLASSES) or state in POSTGRES_UNREACHABLE_STATES:
        return DatabaseUnreachable
    return DatabaseBusy if state.startswith("40") else None


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The entry exists; there is nothing to restore."
    default_code = "conflict"


class ErrorDetailSerializer(serializers.Serializer):
    """DRF's error shape for anything that is not a field error."""

    detail = serializers.CharField()


PRECONDITION_FAILED = OpenApiResponse(
    ErrorDetailSerializer,
    description="If-Match names a version the entry is not at, or no version at all (a weak, unquoted or "
    "malformed tag never matches).",
)
ENTRY_EXISTS = OpenApiResponse(ErrorDetailSerializer, description="The entry exists; there is nothing to restore.")


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, InvalidField):
        exc = exceptions.ValidationError({exc.field: [exc.message]})
    elif isinstance(exc, BatchRejected):
        # JSON keys are text: the operation's index as a string, as the body always showed it.
        exc = exceptions.ValidationError({"operations": {str(index): errors for index, errors in exc.errors.items()}})
    elif isinstance(exc, EntryNotFound):
        exc = exceptions.NotFound()
    elif isinstance(exc, EntryExists):
        exc = Conflict()
    elif isinstance(exc, VersionConflict):
        if exc.deleted_at is not None:
            detail = f"The entry was deleted at version {exc.deleted_at}."
        else:
            detail = f"The entry is at version {exc.current}." if exc.current else "The entry does not exist."
        exc = PreconditionFailed(detail)
    elif (unavailable := database_unavailable(exc)) is not None:
        logger.warning("database unavailable, answered 503 (%s): %s", unavailable.default_code, exc)
        exc = unavailable()
    # Imported here: rest_framework.views imports this module (for the throttle) while it loads.
    from rest_framework.views import exception_handler as drf_exception_handler

    response = drf_exception_handler(exc, context)
    if response is not None:
        response.data = _encodable(response.data)
        if isinstance(exc, DatabaseBusy | DatabaseUnreachable):
            # Which of the two, for a client to tell whether a change may be sent again as it was.
            response.data["code"] = exc.default_code
    return response


def _encodable(data: object) -> object:
    """An error's details with any lone surrogate they echo from the input written as its escape (\\ud800), which
    UTF-8 can carry: DRF's messages quote the bad value ('"..." is not a valid choice.')."""
    if isinstance(data, str):
        return data.encode("utf-8", "backslashreplace").decode("utf-8") if UNSTORABLE_CHARACTERS.search(data) else data
    if isinstance(data, list):
        return [_encodable(item) for item in data]
    if isinstance(data, dict):
        # The names too: an unknown field is named by the name it was sent under.
        return {_encodable(name): _encodable(item) for name, item in data.items()}
    return data


def _whole_number_from_1(text: str) -> int | None:
    """The number text spells in plain digits when it is at least 1, else None ("+1", " 1", "1_0", "2.5" are None,
    though int() takes the first three); digits more than any number has are 10**MAX_DIGITS, past every page and
    over every cap."""
    number = plain_whole_number(text)
    if number is None and text.isascii() and text.isdigit():
        return 10**MAX_DIGITS  # more digits than any number has: past every page, over every cap
    return number or None


class MemoryPagination(PageNumberPagination):
    """Numbered pages: ?page=N&page_size=M, M capped at MEMORYHUB_MAX_PAGE_SIZE.

    A page or page_size that is not a whole number of at least 1 is a 400 naming it; a page past the last is
    DRF's 404 {"detail": "Invalid page."}.
    """

    page_size_query_param = "page_size"
    page_rule = "A whole number of at least 1 is required."

    # Properties, not DRF's plain attributes, so the settings are read per request (and a test's override holds).
    @property
    def page_size(self) -> int:  # type: ignore[override]
        return settings.MEMORYHUB_PAGE_SIZE

    @property
    def max_page_size(self) -> int:  # type: ignore[override]
        return settings.MEMORYHUB_MAX_PAGE_SIZE

    def get_schema_operation_parameters(self, view: "APIView") -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1}
                parameter["description"] = (
                    "The page number, at least 1 (1 when left out); a page past the last answers 404."
                )
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1}
                parameter["description"] = (
                    f"Results per page, at least 1; more than {self.max_page_size} is held to it."
                )
        return parameters

    def get_page_size(self, request: Request) -> int:
        """?page_size=, held to max_page_size (left empty: the default); one that is not a whole number of at
        least 1 is a 400 naming it (DRF would quietly use the default page size instead)."""
        asked = request.query_params.get(self.page_size_query_param)
        if asked is None or asked == "":
            return self.page_size
        size = _whole_number_from_1(asked)
        if size is None:
            raise exceptions.ValidationError(
                {
                    self.page_size_query_param: [
                        f"A whole number of at least 1 is required; larger than {self.max_page_size} is held "
                        f"to {self.max_page_size}."
                    ]
                }
            )
        return min(size, self.max_page_size)

    def get_page_number(self, request: Request, paginator: object = None) -> int:
        """?page=, 1 when left out or empty; one that is not a whole number of at least 1 is a 400 naming it (DRF
        would answer 404 "Invalid page.", as for a page past the last). DRF's ?page=last is not taken either: a
        BoundedPagination list does not know its last page, and every list reads its page the same way."""
        asked = request.query_params.get(self.page_query_param)
        if asked is None or asked == "":
            return 1
        number = _whole_number_from_1(asked)
        if number is None:
            raise exceptions.ValidationError({self.page_query_param: [self.page_rule]})
        return number


# A page's count is exact up to this many matches; beyond, it is this + 1 and count_exact is false.
PAGE_COUNT_LIMIT = 1000


class BoundedPagination(MemoryPagination):
    """Numbered pages whose count stops at PAGE_COUNT_LIMIT + 1, so a page never counts every match.

    The envelope: count (exact up to PAGE_COUNT_LIMIT), count_exact, order ("relevance" or
    "newest": the order of this page's results), next, previous, results. Any page number is
    accepted while it has results, so every match is reachable whatever the count says; next is
    given when the page after this one has results (one row more is read to know). The rows may be a
    QuerySet or anything sliced and counted like one (memories.search.LexicalMatches or HybridMatches, whose own
    count is bounded); order_at(offset) on them names their order, else it is "newest". A
    memories.selectors.EntryListing gives each page (its entries as shown values) with its bounded count in one
    statement; memories.search.ShownMatches gives a search's results as shown values.
    """

    def paginate_queryset(
        self,
        queryset: "QuerySet[Any, Any] | Sequence[Any] | RankedMatches | ShownMatches | EntryListing",
        request: Request,
        view: "APIView | None" = None,
    ) -> list:
        self.request = self._request = request
        page_size = self.get_page_size(request) or settings.MEMORYHUB_PAGE_SIZE
        self.page_number = self.get_page_number(request)
        start = (self.page_number - 1) * page_size
        if start + page_size + 1 > MAX_ROW_OFFSET:
            raise exceptions.NotFound("Invalid page.")
        rows: list[Any]
        if isinstance(queryset, EntryListing):
            # The page (each entry's shown values) and its bounded count in one statement.
            rows, counted = queryset.page(start=start, stop=start + page_size + 1, count_limit=PAGE_COUNT_LIMIT + 1)
        else:
            rows = list(queryset[start : start + page_size + 1])
        if not rows and self.page_number > 1:
            raise exceptions.NotFound("Invalid page.")
        self.has_next = len(rows) > page_size
        if isinstance(queryset, EntryListing):
            self.order, self.count = "newest", counted
        elif isinstance(queryset, LexicalMatches | HybridMatches | ShownMatches):
            # Its own bounded count, and the order at each offset.
            self.order, self.count = str(queryset.order_at(start)), queryset.count()
        else:
            self.order = "newest"
            self.count = queryset[: PAGE_COUNT_LIMIT + 1].count() if isinstance(queryset, QuerySet) else len(queryset)
        # The page itself may know more than the bounded count: it never says fewer than it shows.
        self.count = max(self.count, min(start + len(rows), PAGE_COUNT_LIMIT + 1))
        return rows[:page_size]

    def get_next_link(self) -> str | None:
        if not self.has_next:
            return None
        return replace_query_param(self._request.build_absolute_uri(), self.page_query_param, self.page_number + 1)

    def get_previous_link(self) -> str | None:
        if self.page_number <= 1:
            return None
        url = self._request.build_absolute_uri()
        if self.page_number == 2:
            return remove_query_param(url, self.page_query_param)
        return replace_query_param(url, self.page_query_param, self.page_number - 1)

    def get_paginated_response(self, data: list) -> Response:
        return Response(
            {
                "count": self.count,
                "count_exact": self.count <= PAGE_COUNT_LIMIT,
                "order": self.order,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": ["count", "count_exact", "order", "results"],
            "properties": {
                "count": {
                    "type": "integer",
                    "example": 123,
                    "description": f"How many results there are, exact up to {PAGE_COUNT_LIMIT}; "
                    f"{PAGE_COUNT_LIMIT + 1} means more (count_exact is then false).",
                },
                "count_exact": {"type": "boolean", "description": "Whether count is every result."},
                "order": {
                    "type": "string",
                    "enum": ["relevance", "newest"],
                    "description": "The order of this page: best match first (the ranked candidates of a "
                    "query), or newest first (lists, and a query's results past its ranked candidates).",
                },
                "next": {"type": "string", "nullable": True, "format": "uri"},
                "previous": {"type": "string", "nullable": True, "format": "uri"},
                "results": schema,
            },
        }


class HubJSONParser(JSONParser):
    """Parses JSON bodies; a body nested deeper than the decoder can follow is a 400, not a 500.

    Values nested deeper than the hub keeps (validation.META_MAX_DEPTH) get their own 400 naming
    the field after parsing.
    """

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None


class TokenRateThrottle(BaseThrottle):
    """Counts requests per API token (per account for a logged-in session); no limit when the rate is empty.

    Fixed windows aligned to the clock, counted in memoryhub.ratelimit (shared memory on one
    machine, or Redis). The rate is read from settings on every request, so a changed setting
    applies at once. Refused requests count too: a client that keeps knocking waits the window out.
    """

    def __init__(self) -> None:
        self.retry_after = 0.0

    def allow_request(self, request: Request, view: "APIView") -> bool:
        if not settings.MEMORYHUB_RATE_LIMIT:
            return True
        rate = parse_rate(settings.MEMORYHUB_RATE_LIMIT)
        window = rate_window(self.ident_of(request), rate)
        if window.count <= rate.limit:
            return True
        self.retry_after = max(window.ends_at - time.time(), 1.0)
        return False

    def wait(self) -> float:
        return self.retry_after

    def ident_of(self, request: Request) -> str:
        token_key = getattr(request.auth, "key", None)
        if token_key:
            # The counter is named after a digest: the token itself never lands in the counters.
            return "token-" + hashlib.sha256(token_key.encode()).hexdigest()[:32]
        if request.user and request.user.is_authenticated:
            return f"account-{request.user.pk}"
        return f"address-{self.get_ident(request) or 'unknown'}"
