"""The dashboard: server-rendered pages to inspect, search, edit and forget an account's memories.

Views are thin: they parse the request, call a selector (reads) or a service (writes), and render.
Every page shows the logged-in account's memories. Staff may look further: the overview and users
pages take ?all=1 (or true, yes, on: every account at once), and the other pages take ?account=NAME (that account's
memories; changes are recorded with the staff member as the actor). For anyone else both are
ignored, so an account never sees another's memories.

uid and key travel as query parameters (?uid=alice&key=language), not path segments, so that a
uid or key holding '/' or '?' has a page like any other.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote, urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from memories import accounts, diff, search, selectors, services
from memories.backends import hub_status
from memories.context import CONTEXT_QUERY_MAX_LENGTH
from memories.forms import EntryChangeForm, EntryCreateForm, format_expires, format_meta, same_lines
from memories.guard import guard_hides_characters, guard_reasons, name_reveal
from memories.models import HeldWrite, MemoryEntry, MemoryEvent
from memories.validation import MAX_ROW_OFFSET, InvalidField
from memoryhub.numbers import plain_whole_number

# The sort orders a user's memories table offers; each ends on a unique column so pages are stable.
ENTRY_SORTS = {
    "-updated": ("-updated", "-id"),
    "updated": ("updated", "id"),
    "key": ("key",),
    "-key": ("-key",),
    "kind": ("kind", "key"),
    "-kind": ("-kind", "key"),
}
DEFAULT_ENTRY_SORT = "-updated"
# With a query, the default: the search's own order (best match first, then newest).
RELEVANCE_SORT = "relevance"
# The entry page shows this many of the newest changes; the API pages through all of them.
HELD_QUEUE_LIMIT = 100
HISTORY_LIMIT = 50
# Changes counted on the overview.
RECENT_CHANGES_WINDOW = timedelta(hours=24)
# The example the empty states show: an agent's first memory.
EXAMPLE_UID, EXAMPLE_KEY, EXAMPLE_VALUE = "alice", "language", "prefers Python"


@dataclass(frozen=True)
class Scope:
    """Whose memories a page shows."""

    owner: User
    # The ?account= value to carry on every link: empty when the page shows the logged-in account.
    account_param: str


def _scope(request: HttpRequest) -> Scope:
    name = request.GET.get("account", "")
    if not request.user.is_staff or not name or name == request.user.get_username():
        return Scope(owner=accounts.request_account(request), account_param="")
    account = get_user_model().objects.filter(username=name).first()
    if account is None:
        raise Http404("No account has that name.")
    return Scope(owner=account, account_param=account.get_username())


# How ?all= may say yes (any case): the dashboard's own links write 1.
ALL_ACCOUNTS_YES = frozenset({"1", "true", "yes", "on"})


def _all_accounts(request: HttpRequest) -> bool:
    return request.user.is_staff and request.GET.get("all", "").strip().lower() in ALL_ACCOUNTS_YES


def _post_only(back: str, back_label: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A view that only a form's button sends (POST): any other method gets a 405 page with an Allow header
    that says so and links back to the page (the url name back) whose button does it."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def only_post(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            if request.method == "POST":
                return view(request, *args, **kwargs)
            context = {"back_url": reverse(back), "back_label": back_label}
            response = render(request, "405.html", context, status=405)
            response["Allow"] = "POST"
            return response

        return only_post

    return decorate


def _required(request: HttpRequest, name: str) -> str:
    value = request.GET.get(name, "")
    if not value:
        raise Http404(f"The page needs ?{name}=.")
    return value


def _page(rows: QuerySet | list, request: HttpRequest) -> Page:  # a QuerySet of models or of dicts
    return Paginator(rows, settings.MEMORYHUB_PAGE_SIZE).get_page(request.GET.get("page"))


class BoundedPage:
    """A page of rows counted only up to COUNT_LIMIT + 1: Django's Page, less the count of every row.

    The rows may be a QuerySet or a search's memories.search.LexicalMatches or HybridMatches. The page
    reads one row more than it shows, to know whether another page follows. A page past the last one
    shows the last one, as Django's Paginator.get_page does for the dashboard's other lists.
    """

    def __init__(self, rows: "QuerySet[MemoryEntry] | search.RankedMatches", request: HttpRequest) -> None:
        size = settings.MEMORYHUB_PAGE_SIZE
        try:
            self.number = max(1, int(request.GET.get("page", 1)))
        except ValueError:
            self.number = 1
        # No page starts past any offset the database takes.
        self.number = min(self.number, (MAX_ROW_OFFSET - size - 1) // size)
        self.start = (self.number - 1) * size
        found = list(rows[self.start : self.start + size + 1])
        if isinstance(rows, search.LexicalMatches | search.HybridMatches):
            count = rows.count()
        else:
            count = rows[: search.COUNT_LIMIT + 1].count()
        if not found and self.number > 1:
            self.number = _last_page_number(rows, count, size, past=self.start)
            self.start = (self.number - 1) * size
            found = list(rows[self.start : self.start + size + 1])
        self._has_next = len(found) > size
        self.object_list = found[:size]
        self.order = ""
        if isinstance(rows, search.LexicalMatches | search.HybridMatches):
            self.order = str(rows.order_at(self.start))
        # With no page after this one, its rows end the list: the count is exact however many there are.
        self.count = max(count, self.start + len(found)) if self._has_next else self.start + len(found)
        self.count_exact = not self._has_next or self.count <= search.COUNT_LIMIT
        self.num_pages = -(-self.count // size) if self.count_exact else None

    @property
    def first_shown(self) -> int:
        return self.start + 1

    @property
    def last_shown(self) -> int:
        return self.start + len(self.object_list)

    def has_next(self) -> bool:
        return self._has_next

    def has_previous(self) -> bool:
        return self.number > 1

    def has_other_pages(self) -> bool:
        return self.has_next() or self.has_previous()

    def next_page_number(self) -> int:
        return self.number + 1

    def previous_page_number(self) -> int:
        return self.number - 1


def _last_page_number(rows: "QuerySet[MemoryEntry] | search.RankedMatches", count: int, size: int, *, past: int) -> int:
    """The number of the last page of rows, of which count was counted up to COUNT_LIMIT + 1 and the row at
    offset past does not exist: past COUNT_LIMIT, the last row is found by halving the offsets between."""
    if count <= search.COUNT_LIMIT:
        return max(1, -(-count // size))
    there, absent = search.COUNT_LIMIT, past  # the row at COUNT_LIMIT exists: more than COUNT_LIMIT were counted
    while absent - there > 1:
        middle = (there + absent) // 2
        if list(rows[middle : middle + 1]):
            there = middle
        else:
            absent = middle
    return there // size + 1


def page_url(view_name: str, scope: Scope | None = None, **params: str) -> str:
    """A dashboard page's URL with its query parameters (and ?account= when staff look at another account)."""
    if scope is not None and scope.account_param:
        params["account"] = scope.account_param
    query = urlencode({name: value for name, value in params.items() if value not in (None, "")})
    return reverse(view_name) + (f"?{query}" if query else "")


def _first_memory_curl(request: HttpRequest, uid: str = EXAMPLE_UID) -> str:
    """The curl line that stores a first memory, for the empty states."""
    # Built by hand: reverse() cannot take a uid holding '/', and would quote an already quoted one again.
    url = request.build_absolute_uri(f"{reverse('api:user-list')}/{quote(uid, safe='')}/memories/{EXAMPLE_KEY}")
    return (
        f'curl -X PUT {url} -H "Authorization: Token $MEMORYHUB_TOKEN" '
        f"-H 'Content-Type: application/json' -d '{{\"value\": \"{EXAMPLE_VALUE}\"}}'"
    )


def _overview_panels(request: HttpRequest, scope: Scope) -> list[dict]:
    """Extra overview panels from other apps (the latest evaluation's grade, sync status ...).

    settings.MEMORYHUB_OVERVIEW_PANELS lists dotted paths of callables taking (request, owner) and
    returning None (nothing to show) or a dict with a "template" to include and its context. This
    keeps memories from importing the apps that build on it.
    """
    panels = []
    for path in getattr(settings, "MEMORYHUB_OVERVIEW_PANELS", []):
        panel = import_string(path)(request, scope.owner)
        if panel is not None:
            panels.append(panel)
    return panels


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    since = timezone.now() - RECENT_CHANGES_WINDOW
    all_accounts = _all_accounts(request)
    scope = _scope(request)
    if all_accounts:
        counts = selectors.all_accounts_counts(since=since)
    else:
        counts = {
            **selectors.owner_counts(owner=scope.owner),
            "kinds": selectors.kind_counts(owner=scope.owner),
            "changes": selectors.change_count(owner=scope.owner, since=since),
        }
    context = {
        "scope": scope,
        "all_accounts": all_accounts,
        "counts": counts,
        "status": hub_status(),
        "panels": _overview_panels(request, scope),
        "first_memory_curl": _first_memory_curl(request),
    }
    return render(request, "memories/overview.html", context)


@login_required
def user_list(request: HttpRequest) -> HttpResponse:
    search = request.GET.get("search", "").strip()
    all_accounts = _all_accounts(request)
    scope = _scope(request)
    if all_accounts:
        rows = selectors.all_accounts_user_list(search=search or None)
    else:
        rows = selectors.user_list(owner=scope.owner, search=search or None)
    context = {
        "scope": scope,
        "all_accounts": all_accounts,
        "search": search,
        "page": _page(rows, request),
        "first_memory_curl": _first_memory_curl(request),
    }
    return render(request, "memories/user_list.html", context)


@login_required
def user_memories(request: HttpRequest) -> HttpResponse:
    """One user's memories: the same query as the API (?q=, ?kind=), sorted and paged."""
    uid = _required(request, "uid")
    scope = _scope(request)
    typed_query = request.GET.get("q", "")
    query_error = ""
    # Spaces alone hold nothing to look for: the list, as with an empty box.
    query_text = typed_query if typed_query.strip() else ""
    if len(typed_query) > CONTEXT_QUERY_MAX_LENGTH:
        # Refused on the page itself, the text kept in the box to shorten, the memories listed unsearched.
        query_error = f"The search must be at most {CONTEXT_QUERY_MAX_LENGTH} characters; got {len(typed_query)}."
        query_text = ""
    kind = request.GET.get("kind", "")
    default_sort = RELEVANCE_SORT if query_text else DEFAULT_ENTRY_SORT
    sort = request.GET.get("sort", default_sort)
    if sort not in ENTRY_SORTS and sort != default_sort:
        sort = default_sort
    ranking_note = ""
    if query_text:
        found = selectors.entry_search(
            owner=scope.owner, uid=uid, query_text=query_text, kind=kind or None, counted=True
        )
        entries = found.entries
        if found.semantic == search.Semantic.UNAVAILABLE:
            ranking_note = f"Searched by words alone: search by meaning is unavailable ({found.reason})."
        elif found.semantic == search.Semantic.USED:
            waiting = selectors.embeddings_waiting_count(owner=scope.owner, uid=uid)
            if waiting:
                ranking_note = (
                    f"{waiting} of {name_reveal(uid)}'s memories wait to be embedded by the worker "
                    "(./hub work --loop): until then a search finds a new one by its words alone, and a changed one "
                    "by the meaning it had before."
                )
        if sort != RELEVANCE_SORT:
            # Another order of the same matches.
            entries = selectors.entry_find_sorted(
                owner=scope.owner, uid=uid, query_text=query_text, kind=kind or None, order_by=ENTRY_SORTS[sort]
            )
    else:
        entries = selectors.entry_list(owner=scope.owner, uid=uid, kind=kind or None).order_by(*ENTRY_SORTS[sort])
    kinds = selectors.kind_counts(owner=scope.owner, uid=uid)
    page = BoundedPage(entries, request)
    # Ranked by the query, none of the first shown passes the relevance cut-off (the API's `relevant`): said, as
    # the context block's header says it, so the nearest are not taken for answers.
    none_relevant = (
        page.order == "relevance"
        and bool(page.object_list)
        and not any(getattr(entry, "relevant", False) for entry in page.object_list)
    )
    context = {
        "scope": scope,
        "uid": uid,
        "query_text": query_text,
        "typed_query": typed_query,
        "query_error": query_error,
        "query_max_length": CONTEXT_QUERY_MAX_LENGTH,
        "kind": kind,
        "sort": sort,
        "default_sort": default_sort,
        "kinds": kinds,
        "total": sum(row["entries"] for row in kinds),
        "page": page,
        "none_relevant": none_relevant,
        "searches_by_meaning": settings.MEMORYHUB_EMBEDDINGS != "off",
        "ranking_note": ranking_note,
        "first_memory_curl": _first_memory_curl(request, uid),
    }
    return render(request, "memories/user_memories.html", context, status=400 if query_error else 200)


def _history_rows(events: list[MemoryEvent]) -> list[dict]:
    """Each change naming only the fields that changed: a value changed in place as a diff of its words
    (folded when long), a value, kind or meta that appeared or went as before -> after."""
    rows = []
    for event in events:
        changes = []
        for field in ("value", "kind", "meta"):
            before, after = getattr(event, f"{field}_before"), getattr(event, f"{field}_after")
            if before == after:
                continue
            if field == "meta":
                before = format_meta(before) if before is not None else None
                after = format_meta(after) if after is not None else None
            change = {"field": field, "before": before, "after": after, "folded": diff.is_long(before, after)}
            if before is not None and after is not None:
                change["runs"] = diff.text_diff(before, after)
            changes.append(change)
        rows.append({"event": event, "changes": changes})
    return rows


def _gone_by(events: list[MemoryEvent]) -> str:
    """What became of a memory no read shows, from its latest change of state (a rejection changed nothing):
    delete (it can be restored), expire (also when the worker has not removed it yet), or "" (never stored)."""
    latest = next((event for event in events if event.action != MemoryEvent.Action.REJECT), None)
    if latest is None:
        return ""
    if latest.action in (MemoryEvent.Action.CREATE, MemoryEvent.Action.UPDATE):
        return MemoryEvent.Action.EXPIRE
    return latest.action


@login_required
def entry_detail(request: HttpRequest) -> HttpResponse:
    """An entry's full value, its meta as pretty JSON, and its history (also after it was deleted)."""
    uid, key = _required(request, "uid"), _required(request, "key")
    scope = _scope(request)
    entry = selectors.entry_get(owner=scope.owner, uid=uid, key=key)
    events = list(selectors.entry_history(owner=scope.owner, uid=uid, key=key)[:HISTORY_LIMIT])
    held = list(selectors.held_write_list(owner=scope.owner, uid=uid, key=key)[:HISTORY_LIMIT])
    if entry is None and not events:
        raise Http404("No memory has that uid and key.")
    context = {
        "gone_by": _gone_by(events) if entry is None else "",
        "scope": scope,
        "uid": uid,
        "key": key,
        "entry": entry,
        "meta_json": format_meta(entry.meta) if entry is not None else "",
        "guard_reasons": guard_reasons(entry.guard_flag_names) if entry is not None else [],
        "reveal_value": entry is not None and guard_hides_characters(entry.guard_flag_names),
        "history": _history_rows(events),
        "history_limit": HISTORY_LIMIT,
        "held_writes": held,
    }
    return render(request, "memories/entry_detail.html", context)


def _held_redirect(request: HttpRequest, scope: Scope, held: HeldWrite) -> HttpResponse:
    messages.warning(
        request,
        format_html(
            "Held for review: <bdi>{}</bdi> for <bdi>{}</bdi> reads as an instruction to a model or holds hidden "
            "characters ({}). It is not stored until staff approve it.",
            name_reveal(held.key),
            name_reveal(held.uid),
            ", ".join(held.guard_flag_names),
        ),
    )
    return HttpResponseRedirect(page_url("dashboard:held", scope))


def _add_service_error(form: EntryChangeForm, error: InvalidField) -> None:
    form.add_error(error.field if error.field in form.fields else None, error.message)


@login_required
@require_http_methods(["GET", "POST"])
def entry_create(request: HttpRequest) -> HttpResponse:
    scope = _scope(request)
    if request.method == "POST":
        form = EntryCreateForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            # The create form never overwrites: an existing key is edited on its own page, where the
            # version check guards it. (A put racing in between this read and ours is applied as an update.)
            if selectors.entry_get(owner=scope.owner, uid=data["uid"], key=data["key"]) is not None:
                form.add_error("key", "this user has a memory with this key already; open it to edit it.")
            else:
                try:
                    services.entry_put(
                        owner=scope.owner,
                        uid=data["uid"],
                        key=data["key"],
                        value=data["value"],
                        kind=data["kind"],
                        meta=data["meta"],
                        privacy=data["privacy"] or None,
                        expires=data["expires"] if form.expires_changed else services.KEEP,
                        actor=accounts.request_account(request),
                    )
                except InvalidField as error:
                    _add_service_error(form, error)
                except services.WriteHeld as held:
                    return _held_redirect(request, scope, held.held)
                else:
                    messages.success(
                        request,
                        format_html(
                            "Stored <bdi>{}</bdi> for <bdi>{}</bdi>.",
                            name_reveal(data["key"]),
                            name_reveal(data["uid"]),
                        ),
                    )
                    return HttpResponseRedirect(page_url("dashboard:entry", scope, uid=data["uid"], key=data["key"]))
    else:
        form = EntryCreateForm(
            initial={
                "uid": request.GET.get("uid", ""),
                "privacy": selectors.account_policy(account=scope.owner).default_privacy,
            }
        )
    return render(request, "memories/entry_form.html", {"scope": scope, "form": form, "creating": True})


@login_required
@require_http_methods(["GET", "POST"])
def entry_edit(request: HttpRequest) -> HttpResponse:
    uid, key = _required(request, "uid"), _required(request, "key")
    scope = _scope(request)
    entry = selectors.entry_get(owner=scope.owner, uid=uid, key=key)
    if entry is None:
        raise Http404("No memory has that uid and key.")
    entry_url = page_url("dashboard:entry", scope, uid=uid, key=key)
    if request.method == "POST":
        form = EntryChangeForm(request.POST, stored_expires=entry.expires)
        if form.is_valid():
            data = form.cleaned_data
            # A value that differs from the stored one only in its line breaks (the textarea sends CRLF)
            # is the stored one: saving an untouched form changes nothing.
            value = entry.value if same_lines(entry.value) == data["value"] else data["value"]
            try:
                result = services.entry_update(
                    owner=scope.owner,
                    uid=uid,
                    key=key,
                    value=value,
                    kind=data["kind"],
                    meta=data["meta"],
                    privacy=data["privacy"] or None,
                    expires=data["expires"] if form.expires_changed else services.KEEP,
                    actor=accounts.request_account(request),
                    expected_version=data["version"],
                )
            except services.VersionConflict as conflict:
                form.add_error(
                    None,
                    f"This memory changed while you were editing it (it is now at version {conflict.current}). "
                    "Copy what you typed, reload the page, and apply it again.",
                )
            except InvalidField as error:
                _add_service_error(form, error)
            except services.WriteHeld as held:
                return _held_redirect(request, scope, held.held)
            else:
                messages.success(request, "Saved." if result.changed else "Nothing changed.")
                return HttpResponseRedirect(entry_url)
    else:
        form = EntryChangeForm(
            initial={
                "value": entry.value,
                "kind": entry.kind,
                "meta": format_meta(entry.meta),
                "privacy": entry.privacy,
                "expires": format_expires(entry.expires),
                "version": entry.version,
            },
            stored_expires=entry.expires,
        )
    context = {"scope": scope, "form": form, "creating": False, "entry": entry, "entry_url": entry_url}
    return render(request, "memories/entry_form.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def entry_delete(request: HttpRequest) -> HttpResponse:
    uid, key = _required(request, "uid"), _required(request, "key")
    scope = _scope(request)
    if request.method == "POST":
        # The version the confirmation showed: a memory changed since is not deleted unseen.
        shown = request.POST.get("version", "")
        expected_version = plain_whole_number(shown)
        if expected_version is None:
            return HttpResponseBadRequest("The delete form needs the version it showed; reload the page.")
        try:
            deleted = services.entry_delete(
                owner=scope.owner,
                uid=uid,
                key=key,
                actor=accounts.request_account(request),
                expected_version=expected_version,
            )
        except services.VersionConflict as conflict:
            if not conflict.current:  # there is no such memory (any more)
                raise Http404("No memory has that uid and key.") from None
            messages.error(
                request,
                f"{name_reveal(key)} changed since you asked to delete it (it is now at version {conflict.current}); "
                "it was not deleted. Read it again, then delete it if you still want to.",
            )
            return HttpResponseRedirect(page_url("dashboard:entry", scope, uid=uid, key=key))
        if deleted is None:
            raise Http404("No memory has that uid and key.")
        messages.success(
            request, format_html("Deleted <bdi>{}</bdi>. Its history stays on its page.", name_reveal(key))
        )
        return HttpResponseRedirect(page_url("dashboard:user", scope, uid=uid))
    entry = selectors.entry_get(owner=scope.owner, uid=uid, key=key)
    if entry is None:
        raise Http404("No memory has that uid and key.")
    return render(request, "memories/entry_delete.html", {"scope": scope, "entry": entry})


@login_required
@_post_only("dashboard:trash", "Deleted memories")
def entry_restore(request: HttpRequest) -> HttpResponse:
    """Bring a deleted memory back from its history (services.entry_restore) and show it."""
    uid, key = _required(request, "uid"), _required(request, "key")
    scope = _scope(request)
    entry_url = page_url("dashboard:entry", scope, uid=uid, key=key)
    try:
        entry = services.entry_restore(owner=scope.owner, uid=uid, key=key, actor=accounts.request_account(request))
    except services.EntryNotFound:
        raise Http404("No deleted memory has that uid and key.") from None
    except services.EntryExists:
        messages.error(
            request, format_html("<bdi>{}</bdi> exists already: there is nothing to restore.", name_reveal(key))
        )
        return HttpResponseRedirect(entry_url)
    messages.success(
        request,
        format_html(
            "Restored <bdi>{}</bdi> for <bdi>{}</bdi> at version {}.", name_reveal(key), name_reveal(uid), entry.version
        ),
    )
    return HttpResponseRedirect(entry_url)


@login_required
def trash(request: HttpRequest) -> HttpResponse:
    """The account's deleted memories, newest deletion first, each with its last value and a Restore button.

    ?uid= narrows to one user, also one that was forgotten (no live memory left).
    """
    uid = request.GET.get("uid") or None
    scope = _scope(request)
    context = {"scope": scope, "uid": uid, "page": _page(selectors.entry_trash(owner=scope.owner, uid=uid), request)}
    return render(request, "memories/trash.html", context)


@login_required
def held_writes(request: HttpRequest) -> HttpResponse:
    """Writes the guard held. Staff see every account's pending ones, with Approve and Reject; everyone sees
    their account's own (pending and decided, with who decided)."""
    scope = _scope(request)
    context = {
        "scope": scope,
        "queue": list(selectors.all_accounts_held_writes()[:HELD_QUEUE_LIMIT]) if request.user.is_staff else [],
        "queue_limit": HELD_QUEUE_LIMIT,
        "page": _page(selectors.held_write_list(owner=scope.owner), request),
    }
    return render(request, "memories/held_writes.html", context)


@login_required
@_post_only("dashboard:held", "Held writes")
def held_write_decide(request: HttpRequest) -> HttpResponse:
    """Staff approve (the write is applied, as them) or reject (nothing is stored) one held write."""
    if not request.user.is_staff:
        return render(request, "403.html", status=403)
    held_id_text, decision = _required(request, "id"), request.POST.get("decision", "")
    held_id = plain_whole_number(held_id_text)
    if held_id is None or decision not in ("approve", "reject"):
        return HttpResponseBadRequest("id must be a held write's number and decision approve or reject.")
    decider = accounts.request_account(request)
    try:
        if decision == "approve":
            result = services.held_write_approve(held_id=held_id, decider=decider)
            messages.success(
                request,
                format_html(
                    "Approved: <bdi>{}</bdi> for <bdi>{}</bdi> is stored.",
                    name_reveal(result.entry.key),
                    name_reveal(result.entry.uid),
                ),
            )
        else:
            held = services.held_write_reject(held_id=held_id, decider=decider)
            messages.success(
                request,
                format_html(
                    "Rejected: <bdi>{}</bdi> for <bdi>{}</bdi> was not stored.",
                    name_reveal(held.key),
                    name_reveal(held.uid),
                ),
            )
    except HeldWrite.DoesNotExist:
        raise Http404("No held write has that number.") from None
    except services.HeldWriteDecided as error:
        messages.error(request, f"{error}: nothing changed.")
    except InvalidField as error:
        messages.error(request, f"Cannot approve: {str(error).rstrip('.')}.")
    except services.VersionConflict as conflict:
        messages.error(
            request,
            f"Cannot approve: the write named a version of the memory that is gone ({conflict}); it would "
            "overwrite a change its writer had not seen. Reject it.",
        )
    return HttpResponseRedirect(reverse("dashboard:held"))


class LogoutView(auth_views.LogoutView):
    """Django's logout, then a message on the login page saying it worked."""

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.info(request, "You are logged out.")
        return response


@login_required
@require_http_methods(["GET", "POST"])
def user_forget(request: HttpRequest) -> HttpResponse:
    uid = _required(request, "uid")
    scope = _scope(request)
    if request.method == "POST":
        actor = accounts.request_account(request)
        if request.POST.get("erase") == "1":
            erasure = services.user_erase(owner=scope.owner, uid=uid, actor=actor)
            if erasure is None:
                raise Http404("Nothing is known about that user.")
            messages.success(
                request,
                format_html(
                    "Erased <bdi>{}</bdi>: {} memor{} and {} history event{} removed{}. The history records the "
                    "erasure.",
                    name_reveal(uid),
                    erasure.entries,
                    "y" if erasure.entries == 1 else "ies",
                    erasure.events,
                    "" if erasure.events == 1 else "s",
                    ", Honcho's copies queued for deletion" if erasure.honcho_deletions else "",
                ),
            )
            return HttpResponseRedirect(page_url("dashboard:users", scope))
        deleted = services.user_forget(owner=scope.owner, uid=uid, actor=actor)
        if not deleted:
            raise Http404("No memories about that user.")
        messages.success(
            request,
            format_html(
                "Forgot <bdi>{}</bdi>: {} memor{} deleted, history kept.",
                name_reveal(uid),
                deleted,
                "y" if deleted == 1 else "ies",
            ),
        )
        return HttpResponseRedirect(page_url("dashboard:users", scope))
    entries = selectors.entry_list(owner=scope.owner, uid=uid).count()
    history = selectors.user_history_count(owner=scope.owner, uid=uid)
    if not entries and not history:
        raise Http404("Nothing is known about that user.")
    context = {"scope": scope, "uid": uid, "entries": entries, "history": history}
    return render(request, "memories/user_forget.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def api_token(request: HttpRequest) -> HttpResponse:
    """The logged-in account's own API token: show it, issue a new one, revoke it."""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            accounts.token_rotate(account=accounts.request_account(request))
            messages.success(request, "A new token is ready; the old one no longer works.")
        elif action == "revoke":
            if accounts.token_revoke(account=accounts.request_account(request)):
                messages.success(request, "Token revoked: agents using it are refused from now on.")
            else:
                messages.info(request, "There was no token to revoke.")
        return HttpResponseRedirect(reverse("dashboard:token"))
    token_key = Token.objects.filter(user=accounts.request_account(request)).values_list("key", flat=True).first()
    context = {"token_key": token_key, "info_curl_url": request.build_absolute_uri(reverse("api:info"))}
    return render(request, "memories/token.html", context)
