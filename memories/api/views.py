"""The REST API: thin viewsets that parse, call a service or a selector, and render.

memories.api.urls registers them on the router. Every viewset reads and writes only the requesting
account's entries; another account's uid or key answers 404, exactly as a missing one.
"""

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from memories import context, selectors, services
from memories.accounts import request_account
from memories.api.conditional import (
    ETAG_HEADER,
    IF_MATCH_PARAMETER,
    IF_NONE_MATCH_CHANGE_PARAMETER,
    IF_NONE_MATCH_GET_PARAMETER,
    IF_NONE_MATCH_PARAMETER,
    entry_etag,
    if_match_version,
    if_none_match_holds,
    with_etag,
)
from memories.api.serializers import (
    BatchResultSerializer,
    BatchSerializer,
    ContextBlockSerializer,
    EntryCreateSerializer,
    EntrySerializer,
    EntryWriteSerializer,
    EventSerializer,
    ForgetSerializer,
    HeldWriteSerializer,
    InfoSerializer,
    SearchResultSerializer,
    SyncStatusSerializer,
    UserSummarySerializer,
    entry_data,
    entry_page_data,
    search_page_data,
)
from memories.backends import hub_status
from memories.filters import (
    FILTER_MAX_FIELDS,
    FILTER_MAX_VALUES,
    INCLUDE_EXPIRED_PARAMETER,
    filter_from_params,
)
from memories.models import UID_MAX_LENGTH, HeldWrite, MemoryEntry, Privacy
from memories.search import HybridMatches, LexicalMatches, RankedMatches, ShownMatches
from memories.tool import TOOL_SCHEMA, run_tool
from memories.validation import (
    EXPIRY_MAX_SECONDS,
    FALSE_WORDS,
    TRUE_WORDS,
    InvalidField,
    check_flag,
    check_key,
    check_uid,
)
from memories.work import work_status
from memoryhub.api import ENTRY_EXISTS, PRECONDITION_FAILED, BoundedPagination, MemoryPagination, PreconditionFailed
from memoryhub.numbers import plain_whole_number

UID_PARAMETER = OpenApiParameter("uid", str, OpenApiParameter.PATH, description="The person the memories are about.")
KEY_PARAMETER = OpenApiParameter("key", str, OpenApiParameter.PATH, description="The memory's key.")
# uid and key are one path segment each (dots allowed): a key holding '/' is reached through the
# tool endpoint or POST with the key in the body.
SEGMENT = r"[^/]+"
BATCH_KEY = "batch"
# How the schema names the words a yes-or-no parameter takes (validation.check_flag).
FLAG_WORDS = f"{', '.join(TRUE_WORDS)} (any case; {', '.join(word for word in FALSE_WORDS if word)} or empty for no)"
# Which ranking answered a search: "hybrid", or "lexical; semantic off" / "lexical; semantic unavailable: why".
RANKING_HEADER = "X-MemoryHub-Ranking"


def _paginate(
    view: "HubViewSet",
    request: Request,
    queryset: "QuerySet | Sequence | RankedMatches | selectors.EntryListing",
    serializer_class: type[serializers.BaseSerializer],
) -> Response:
    paginator = view.pagination_class()
    # BoundedPagination (the memories' lists) also takes a search's LexicalMatches or HybridMatches.
    page = paginator.paginate_queryset(queryset, request, view=view)  # type: ignore[arg-type]
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


HELD = OpenApiResponse(
    HeldWriteSerializer,
    description="The write guard held the write for review (the account's guard mode is hold): nothing is stored "
    "until staff approve it; Location names where its status is.",
)


def _held_response(request: Request, held: HeldWrite) -> Response:
    response = Response(HeldWriteSerializer(held).data, status=status.HTTP_202_ACCEPTED)
    response["Location"] = reverse("api:held-write-detail", kwargs={"pk": held.pk}, request=request)
    return response


def _write_response(result: services.PutResult) -> Response:
    code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
    return with_etag(Response(entry_data(result.entry), status=code), result.entry)


def _info_sync(request: Request) -> dict[str, bool | int]:
    """Whether sync is on and, when it is, the account's waiting and failed changes (no query when off)."""
    if not settings.MEMORYHUB_HONCHO_SYNC:
        return {"enabled": False}
    sync = selectors.sync_status(owner=request_account(request))
    return {"enabled": True, "pending": sync.pending, "failed": sync.failed}


class HubViewSet(viewsets.ViewSet):
    pagination_class = MemoryPagination

    def initial(self, request: Request, *args: object, **kwargs: object) -> None:
        super().initial(request, *args, **kwargs)
        # No database stores NUL in text (PostgreSQL refuses it): a query parameter holding one is bad input.
        for name, value in request.query_params.items():
            if "\x00" in value:
                raise InvalidField(name, "must not contain NUL characters.")
        # A uid or key in the path gets the same checks as one in a body: 400 naming the field.
        if "uid" in kwargs:
            check_uid(kwargs["uid"])
        if "key" in kwargs:
            check_key(kwargs["key"])


CONTEXT_DESCRIPTION = f"""A prompt-ready plain-text block of the memories an agent should see this turn, within
`budget` characters ({context.CONTEXT_DEFAULT_BUDGET} by default, {context.CONTEXT_MIN_BUDGET} to
{context.CONTEXT_MAX_BUDGET}), and the entries it shows. With `q`, the memories the ranked search finds
for it come first (up to {context.CONTEXT_RELEVANT_LIMIT}); the newest fill the rest. A memory that does
not fit whole is skipped, never cut.

Format ({context.CONTEXT_FORMAT}): a header line `Memories about UID (SHOWN of TOTAL, ORDER):`, then one
item per memory, `- key (kind): value`; a value's further lines are indented by two spaces. Every line
ends with a newline. No memories, or a budget too small for the header and one memory, give an empty
text. Each entry's `reason`: `{context.REASON_RELEVANT}` (found by `q` and judged relevant: it passes the
search's relevance cut-off, as `relevant` on `?q=`'s results; with embeddings off, every word match),
`{context.REASON_NEAREST}` (found by `q` and ranked first, but not judged relevant: most likely no answer)
or `{context.REASON_RECENT}` (among the newest). ORDER is `{context.ORDER_RELEVANT}` when a memory shown is
relevant, `{context.ORDER_NEAREST}` when `q` ranked the first ones but none is, `{context.ORDER_NEWEST}`
otherwise. Treat a reason or an ORDER you do not know as informational: later versions may add some.

The same data, budget and q give the same block. Its ETag changes whenever the block would (a write to
the user's memories, a changed ranking, an expired memory): send it back in If-None-Match to get 304
without a body when nothing changed."""


FILTER_PARAMETERS = [
    OpenApiParameter("kind", str, description="Only entries of this kind."),
    OpenApiParameter(
        "kind__in",
        str,
        description=f"Only entries of one of these kinds, comma-separated (at most {FILTER_MAX_VALUES}); "
        "not with kind.",
    ),
    OpenApiParameter(
        "meta.FIELD",
        str,
        description="Only entries whose top-level meta field FIELD (write the field's name in place of FIELD: "
        "`?meta.project=apollo`) equals this value. FIELD is a letter or '_' then letters, digits, '_' or '-'. "
        'Text that spells a number or boolean also matches it ("3" matches 3). Several fields: all must match '
        f"(at most {FILTER_MAX_FIELDS}).",
    ),
    OpenApiParameter(
        "meta.FIELD__in",
        str,
        description="Only entries whose top-level meta field FIELD equals one of these comma-separated values "
        f"(at most {FILTER_MAX_VALUES}): `?meta.project__in=apollo,gemini`.",
    ),
    OpenApiParameter(
        INCLUDE_EXPIRED_PARAMETER,
        bool,
        description=f"{FLAG_WORDS}: also the entries whose expiry has passed and that the worker has not deleted yet.",
    ),
]


@extend_schema(tags=["users"])
class UserViewSet(HubViewSet):
    lookup_field = "uid"
    lookup_value_regex = SEGMENT

    @extend_schema(
        summary="List the account's users",
        parameters=[
            OpenApiParameter(
                "search", str, description=f"Only uids holding this text (at most {UID_MAX_LENGTH} characters)."
            )
        ],
        responses=UserSummarySerializer(many=True),
    )
    def list(self, request: Request) -> Response:
        search = request.query_params.get("search") or None
        if search is not None and len(search) > UID_MAX_LENGTH:
            # No uid holds more: refused as the other parameters past their limits are, not scanned for.
            raise InvalidField("search", f"must be at most {UID_MAX_LENGTH} characters (a uid's); got {len(search)}.")
        users = selectors.user_list(owner=request_account(request), search=search)
        return _paginate(self, request, users, UserSummarySerializer)

    @extend_schema(
        summary="Forget a user: delete every entry, keep the history (erase=1: erase the history too)",
        description="With erase=1, for a request to be forgotten: the user's entries, their whole history and "
        "their Honcho sessions go, and one history event stays saying who erased how many entries, and when, "
        "without any value. 404 when the user has no entries (nor, with erase=1, any history).",
        parameters=[
            UID_PARAMETER,
            OpenApiParameter(
                "erase",
                bool,
                description=f"{FLAG_WORDS}: erase the history and Honcho sessions too.",
            ),
        ],
        responses=ForgetSerializer,
    )
    def destroy(self, request: Request, uid: str) -> Response:
        account = request_account(request)
        if check_flag("erase", request.query_params.get("erase", "")):
            erasure = services.user_erase(owner=account, uid=uid, actor=account)
            if erasure is None:
                raise Http404
            return Response({"uid": uid, "deleted": erasure.entries, "erased": True, "history_erased": erasure.events})
        deleted = services.user_forget(owner=account, uid=uid, actor=account)
        if not deleted:
            raise Http404
        return Response({"uid": uid, "deleted": deleted, "erased": False})

    @extend_schema(
        summary="The context block: a user's memories as prompt-ready text within a budget",
        description=CONTEXT_DESCRIPTION,
        parameters=[
            UID_PARAMETER,
            OpenApiParameter(
                "budget",
                int,
                description=f"The most characters the text may have ({context.CONTEXT_MIN_BUDGET} to "
                f"{context.CONTEXT_MAX_BUDGET}; default {context.CONTEXT_DEFAULT_BUDGET}).",
            ),
            OpenApiParameter(
                "q",
                str,
                description="What this turn is about: memories matching it come first "
                f"(at most {context.CONTEXT_QUERY_MAX_LENGTH} characters; empty or spaces alone: the list, newest "
                "first).",
            ),
            OpenApiParameter(
                "If-None-Match",
                str,
                OpenApiParameter.HEADER,
                required=False,
                description="The ETag of a block already held: 304 when the block is still the same.",
            ),
            OpenApiParameter(
                "ETag",
                str,
                OpenApiParameter.HEADER,
                response=[200, 304],
                description="The block's entity tag; it changes whenever the block would.",
            ),
        ],
        responses={200: ContextBlockSerializer, 304: OpenApiResponse(description="The block has not changed.")},
    )
    @action(detail=True, methods=["get"], url_path="context", url_name="context")
    def context_block(self, request: Request, uid: str) -> Response:
        budget = context.check_budget(request.query_params.get("budget", context.CONTEXT_DEFAULT_BUDGET))
        query_text = context.check_query_text(request.query_params.get("q", ""))
        block = selectors.context_block(owner=request_account(request), uid=uid, budget=budget, query_text=query_text)
        held = {tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")}
        if block.etag in held or "*" in held:
            response = Response(status=status.HTTP_304_NOT_MODIFIED)
        else:
            response = Response(ContextBlockSerializer(block).data)
        response["ETag"] = block.etag
        return response


def _expected_version(
    request: Request, body: EntryWriteSerializer, *, uid: str, key: str, writes_entry: bool | None = None
) -> int | None:
    """The version a write asks the entry to be at: If-Match's (or If-None-Match's), or the body's
    expected_version (taken out of the body's fields). Both given, the headers' holds (else their 412) and the
    body's must be the same version: the entry is at the one the headers found, so another is a 412 naming it."""
    in_body = body.validated_data.pop("expected_version", None)
    in_headers = if_match_version(request, uid=uid, key=key, writes_entry=writes_entry)
    if in_body is not None and in_headers is not None and in_body != in_headers:
        if in_headers == services.ABSENT_VERSION:
            raise PreconditionFailed(
                f"If-None-Match: * asks that there be no entry, expected_version that it be at version {in_body}: "
                "both cannot hold."
            )
        raise services.VersionConflict(in_headers)
    return in_headers if in_headers is not None else in_body


@extend_schema(tags=["memories"], parameters=[UID_PARAMETER])
class MemoryViewSet(HubViewSet):
    # A user's memories, registered under users/{uid}/memories; the entry's key is the lookup.
    # (A comment, not a docstring: the schema would show it on every operation.)

    lookup_field = "key"
    lookup_value_regex = SEGMENT
    pagination_class = BoundedPagination

    @extend_schema(
        summary="List a user's memories, or query them with q",
        parameters=[
            OpenApiParameter(
                "q",
                str,
                description="Entries whose key or value holds any of these words (any case, any accents; "
                '"words in quotes" as one phrase), best match first, then the rest newest first; each result '
                "has its score and matched_terms. With embeddings on, also entries close in meaning, in one ranking "
                "that fuses both (each result then has its lexical_rank and semantic_similarity); the "
                f"{RANKING_HEADER} header says which ranking answered: hybrid, or lexical and why "
                f"(at most {context.CONTEXT_QUERY_MAX_LENGTH} characters; empty or spaces alone: the list, newest "
                "first).",
            ),
            *FILTER_PARAMETERS,
            OpenApiParameter(
                "match",
                str,
                enum=list(selectors.MATCH_MODES),
                description="With q: 'ranked' (default) uses the search index; 'substring' scans, newest first.",
            ),
        ],
        responses=SearchResultSerializer(many=True),
    )
    def list(self, request: Request, uid: str) -> Response:
        query_text = context.check_query_text(request.query_params.get("q", ""))
        filters = filter_from_params(request.query_params)
        match = request.query_params.get("match") or selectors.MATCH_RANKED
        if match not in selectors.MATCH_MODES:
            raise serializers.ValidationError({"match": [f"must be one of {', '.join(selectors.MATCH_MODES)}."]})
        # A q of spaces alone holds nothing to look for: the list, as without q.
        if query_text.strip():
            found = selectors.entry_search(
                owner=request_account(request),
                uid=uid,
                query_text=query_text,
                filters=filters,
                match=match,
                counted=True,
            )
            if isinstance(found.entries, LexicalMatches | HybridMatches):
                # Each result written straight from the values it shows, without building its entry.
                paginator = self.pagination_class()
                page = paginator.paginate_queryset(ShownMatches(found.entries), request, view=self)
                response = paginator.get_paginated_response(search_page_data(page))
            else:
                response = _paginate(self, request, found.entries, SearchResultSerializer)
            response[RANKING_HEADER] = found.ranking
            return response
        listing = selectors.entry_listing(owner=request_account(request), uid=uid, filters=filters)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(listing, request, view=self)
        return paginator.get_paginated_response(entry_page_data(page))

    @extend_schema(
        summary="Store a memory (upsert), the key in the body",
        request=EntryCreateSerializer,
        parameters=[IF_MATCH_PARAMETER, IF_NONE_MATCH_PARAMETER],
        responses={200: EntrySerializer, 201: EntrySerializer, 202: HELD, 412: PRECONDITION_FAILED},
    )
    def create(self, request: Request, uid: str) -> Response:
        body = EntryCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        # The key in the body: the headers' preconditions hold of it as a PUT's hold of the key in its path.
        key = body.validated_data["key"]
        expected_version = _expected_version(request, body, uid=uid, key=key, writes_entry=True)
        try:
            result = services.entry_put(
                owner=request_account(request),
                uid=uid,
                actor=request_account(request),
                expected_version=expected_version,
                **body.validated_data,
            )
        except services.WriteHeld as held:
            return _held_response(request, held.held)
        return _write_response(result)

    def _entry(self, request: Request, uid: str, key: str) -> MemoryEntry:
        entry = selectors.entry_get(owner=request_account(request), uid=uid, key=key)
        if entry is None:
            raise Http404
        return entry

    @extend_schema(
        summary="Get a memory (its ETag is its version)",
        responses={200: EntrySerializer, 304: OpenApiResponse(description="The version named in If-None-Match.")},
        parameters=[KEY_PARAMETER, IF_NONE_MATCH_GET_PARAMETER, ETAG_HEADER],
    )
    def retrieve(self, request: Request, uid: str, key: str) -> Response:
        entry = self._entry(request, uid, key)
        if if_none_match_holds(request, entry_etag(entry)):
            return with_etag(Response(status=status.HTTP_304_NOT_MODIFIED), entry)
        return with_etag(Response(entry_data(entry)), entry)

    @extend_schema(
        summary="Store a memory (upsert): 201 when created, 200 when changed or unchanged",
        request=EntryWriteSerializer,
        parameters=[KEY_PARAMETER, IF_MATCH_PARAMETER, IF_NONE_MATCH_PARAMETER, ETAG_HEADER],
        responses={200: EntrySerializer, 201: EntrySerializer, 202: HELD, 412: PRECONDITION_FAILED},
    )
    def update(self, request: Request, uid: str, key: str) -> Response:
        body = EntryWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        expected_version = _expected_version(request, body, uid=uid, key=key)
        try:
            result = services.entry_put(
                owner=request_account(request),
                uid=uid,
                key=key,
                actor=request_account(request),
                expected_version=expected_version,
                **body.validated_data,
            )
        except services.WriteHeld as held:
            return _held_response(request, held.held)
        return _write_response(result)

    @extend_schema(
        summary="Change some fields of a memory",
        request=EntryWriteSerializer,
        parameters=[KEY_PARAMETER, IF_MATCH_PARAMETER, IF_NONE_MATCH_CHANGE_PARAMETER, ETAG_HEADER],
        responses={200: EntrySerializer, 202: HELD, 412: PRECONDITION_FAILED},
    )
    def partial_update(self, request: Request, uid: str, key: str) -> Response:
        body = EntryWriteSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        expected_version = _expected_version(request, body, uid=uid, key=key)
        try:
            result = services.entry_update(
                owner=request_account(request),
                uid=uid,
                key=key,
                actor=request_account(request),
                expected_version=expected_version,
                **body.validated_data,
            )
        except services.WriteHeld as held:
            return _held_response(request, held.held)
        return with_etag(Response(entry_data(result.entry)), result.entry)

    @extend_schema(
        summary="Delete a memory (its history stays)",
        parameters=[KEY_PARAMETER, IF_MATCH_PARAMETER, IF_NONE_MATCH_CHANGE_PARAMETER],
        responses={204: None, 412: PRECONDITION_FAILED},
    )
    def destroy(self, request: Request, uid: str, key: str) -> Response:
        expected_version = if_match_version(request, uid=uid, key=key)
        deleted = services.entry_delete(
            owner=request_account(request),
            uid=uid,
            key=key,
            actor=request_account(request),
            expected_version=expected_version,
        )
        if deleted is None:
            raise Http404
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Restore a deleted memory from its history",
        description="Brings back the entry as it was when last deleted; its version goes on from the deleted one. "
        'If-Match names the version the entry was deleted at (the ETag it last had, e.g. "2"): 412 when the '
        "last deletion is not of that version. 404 when the history holds no deletion to undo, 409 when the "
        "entry exists.",
        request=None,
        parameters=[KEY_PARAMETER, IF_MATCH_PARAMETER, ETAG_HEADER],
        responses={201: EntrySerializer, 409: ENTRY_EXISTS, 412: PRECONDITION_FAILED},
    )
    @action(detail=True, methods=["post"])
    def restore(self, request: Request, uid: str, key: str) -> Response:
        account = request_account(request)
        expected_version = if_match_version(
            request,
            uid=uid,
            key=key,
            current_version=lambda: selectors.entry_deleted_version(owner=account, uid=uid, key=key),
            absent="The entry has no deletion to undo.",
        )
        entry = services.entry_restore(
            owner=account, uid=uid, key=key, actor=account, expected_version=expected_version
        )
        return with_etag(Response(entry_data(entry), status=status.HTTP_201_CREATED), entry)

    @extend_schema(
        summary="A memory's history, newest first",
        parameters=[KEY_PARAMETER],
        responses=EventSerializer(many=True),
    )
    @action(detail=True, methods=["get"])
    def history(self, request: Request, uid: str, key: str) -> Response:
        events = selectors.entry_history(owner=request_account(request), uid=uid, key=key)
        response = _paginate(self, request, events, EventSerializer)
        if response.data["count"] == 0:
            raise Http404
        return response

    @extend_schema(
        summary="Apply up to 500 puts and deletes to a user's memories, all or none",
        description=(
            "Operations run in order in one transaction. If any is invalid or meets a stale "
            "expected_version, nothing is applied and the 400 maps the index of each failed operation "
            'to its errors: {"operations": {"2": {"key": [...]}}}. A memory whose key is \'batch\' is still reached by '
            "GET, PUT, PATCH and DELETE on this path; only POST means a batch. A put the write guard holds "
            '(the account\'s guard mode is hold) is "held", with its held write; the others are applied.'
        ),
        request=BatchSerializer,
        responses={200: BatchResultSerializer},
    )
    @action(detail=False, methods=["post"])
    def batch(self, request: Request, uid: str) -> Response:
        body = BatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        operations = [services.BatchOperation(**operation) for operation in body.validated_data["operations"]]
        outcomes = services.entries_batch(
            owner=request_account(request), uid=uid, operations=operations, actor=request_account(request)
        )
        return Response(BatchResultSerializer({"results": outcomes}).data)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # The batch route comes before the entry's: only POST there means a batch, every other
        # method reaches the entry whose key is "batch", as any other key.
        if self.action_map.get("post") == "batch" and request.method != "POST":
            return _entry_view(request, *args, key=BATCH_KEY, **kwargs)
        return super().dispatch(request, *args, **kwargs)


@extend_schema(tags=["hub"])
class InfoViewSet(HubViewSet):
    singleton = True

    @extend_schema(summary="The backend in use, the account's counts and the hub's version", responses=InfoSerializer)
    def retrieve(self, request: Request) -> Response:
        backend = hub_status()
        return Response(
            {
                "backend": backend.backend,
                "cloud": backend.cloud,
                "available": backend.available,
                "reason": backend.reason,
                "counts": selectors.owner_counts(owner=request_account(request)),
                "sync": _info_sync(request),
                "work": work_status().as_json(),
                "embeddings": settings.MEMORYHUB_EMBEDDINGS,
                "version": settings.VERSION,
            }
        )


@extend_schema(tags=["hub"])
class SyncStatusViewSet(HubViewSet):
    singleton = True

    @extend_schema(
        summary="Sync to Honcho: pending and failed changes, the oldest pending's age, the last success and error",
        description="An account sees its own entries' changes; a staff account sees the whole hub's.",
        responses=SyncStatusSerializer,
    )
    def retrieve(self, request: Request) -> Response:
        status_now = selectors.sync_status(owner=None if request.user.is_staff else request_account(request))
        return Response(SyncStatusSerializer(status_now).data)


TOOL_REPLY = inline_serializer(
    "ToolReply",
    fields={"ok": serializers.BooleanField(), "error": serializers.CharField(required=False)},
)


@extend_schema(tags=["tool"])
class ToolViewSet(HubViewSet):
    singleton = True

    @extend_schema(
        summary="Run one memory_backend tool call",
        description="Takes the tool's arguments (those of GET /tool/schema: "
        f"{', '.join(TOOL_SCHEMA['parameters']['properties'])}) and replies as the tool does; any other argument is "
        "an ok: false reply naming it.",
        request=inline_serializer(
            "ToolCall",
            fields={
                "action": serializers.ChoiceField(choices=TOOL_SCHEMA["parameters"]["properties"]["action"]["enum"]),
                "uid": serializers.CharField(required=False, default="default"),
                "key": serializers.CharField(required=False),
                "value": serializers.CharField(required=False),
                "query": serializers.CharField(required=False),
                "limit": serializers.IntegerField(
                    required=False, min_value=1, max_value=settings.MEMORYHUB_MAX_PAGE_SIZE
                ),
                "meta": serializers.DictField(required=False),
                "privacy": serializers.ChoiceField(choices=Privacy.choices, required=False),
                "kind": serializers.JSONField(required=False, help_text="query: a kind, or a list of kinds."),
                "ttl": serializers.IntegerField(required=False, min_value=1, max_value=EXPIRY_MAX_SECONDS),
            },
        ),
        responses={200: OpenApiTypes.OBJECT},
    )
    def create(self, request: Request) -> Response:
        arguments = request.data if isinstance(request.data, dict) else {}
        return Response(run_tool(account=request_account(request), arguments=arguments))

    @extend_schema(summary="The tool's function-calling schema", responses=OpenApiTypes.OBJECT)
    # Not named `schema`: that is the view's OpenAPI generator.
    @action(detail=False, methods=["get"], url_path="schema", url_name="schema")
    def tool_schema(self, request: Request) -> Response:
        return Response(TOOL_SCHEMA)


@extend_schema(tags=["memories"])
class HeldWriteViewSet(HubViewSet):
    """The account's writes the guard held for review: what a 202 answer's Location names."""

    lookup_value_regex = "[0-9]+"

    @extend_schema(
        summary="The account's held writes, newest first",
        description="Writes the guard held (pending review), and those staff approved or rejected, with who decided.",
        parameters=[
            OpenApiParameter(
                "status", str, enum=HeldWrite.Status.values, description="Only the held writes of this status."
            )
        ],
        responses=HeldWriteSerializer(many=True),
    )
    def list(self, request: Request) -> Response:
        wanted = request.query_params.get("status") or None
        if wanted is not None and wanted not in HeldWrite.Status.values:
            raise InvalidField("status", f"must be one of {', '.join(HeldWrite.Status.values)}.")
        held = selectors.held_write_list(owner=request_account(request), status=wanted)
        return _paginate(self, request, held, HeldWriteSerializer)

    @extend_schema(
        summary="One held write: pending, approved or rejected",
        parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH, description="The held write's number.")],
        responses=HeldWriteSerializer,
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        held_id = plain_whole_number(pk)
        held = None if held_id is None else selectors.held_write_get(owner=request_account(request), held_id=held_id)
        if held is None:
            raise Http404
        return Response(HeldWriteSerializer(held).data)


# The entry's own actions, for the methods other than POST that reach the batch route.
_entry_view = MemoryViewSet.as_view(
    {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}, detail=True, basename="memory"
)
