"""The MCP tools: remember, recall, get, list, forget, history and context.

Each tool parses its arguments (the SDK checks them against the JSON schema built from the
signature), calls memories.services or memories.selectors for the calling account in Django's
thread, and answers with the REST API's shapes. Bad input becomes a tool error whose sentence
names the argument and what to change; nothing is half-written, since each service is one
transaction.

The account comes from the transport: stdio serves one account named on the command line;
Streamable HTTP finds the token's account in the request scope (memories.mcp.http).
"""

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal, Protocol, TypeVar, cast

import anyio
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field, ValidationError
from pydantic_core import PydanticCustomError

from memories import context, selectors, services
from memories.api.serializers import (
    ContextBlockSerializer,
    EventSerializer,
    SearchResultSerializer,
    entry_data,
    search_results_data,
)
from memories.filters import filter_from_arguments
from memories.models import DEFAULT_KIND, KEY_MAX_LENGTH, UID_MAX_LENGTH, MemoryEntry
from memories.validation import EXPIRY_MAX_SECONDS, InvalidField, check_key, check_kind, check_uid

SERVER_NAME = "memoryhub"
INSTRUCTIONS = (
    "MemoryHub keeps small, durable facts about the people you serve (preferences, facts, patterns), "
    "per user (uid), across sessions. Call `context` at the start of a turn for what you should know "
    "now; `remember` what the user tells you that will matter later; `recall` to search; `forget` what "
    "is wrong or asked to be forgotten."
)
# Where memories.mcp.http puts the token's account in the ASGI scope for the tools to find.
ACCOUNT_SCOPE_KEY = "memoryhub.account"

AccountResolver = Callable[[Context], User]
Result = TypeVar("Result")

Uid = Annotated[
    str,
    Field(
        description=f"The person the memories are about: a stable id you choose, 1 to {UID_MAX_LENGTH} "
        "characters (e.g. 'discord:1234'). Use 'default' when you serve one person.",
    ),
]
KEY_DESCRIPTION = f"The memory's name, unique per user, 1 to {KEY_MAX_LENGTH} characters, e.g. 'language' or 'editor'."
Key = Annotated[str, Field(description=KEY_DESCRIPTION)]
# remember's key: the one tool for which an existing key means something more.
StoredKey = Annotated[str, Field(description=KEY_DESCRIPTION + " Storing under an existing key replaces its value.")]
# A value a recall's meta filter compares a field with.
MetaFilterValue = str | int | float | bool


def _not_true_or_false(value: object) -> object:
    if isinstance(value, bool):
        raise PydanticCustomError("whole_number", "Input should be a whole number, not true or false")
    return value


# Put after the Field of a whole-number argument (after it, so the schema keeps its minimum and maximum): the
# argument is taken as pydantic takes an int (a string of digits too), but never true or false, which it would take
# for 1 and 0 (a ttl of true stored a memory for one second).
WHOLE_NUMBER = BeforeValidator(_not_true_or_false)
PageNumber = Annotated[int, Field(ge=1, description="Which page, from 1."), WHOLE_NUMBER]
PageSize = Annotated[int, Field(ge=1, le=settings.MEMORYHUB_MAX_PAGE_SIZE, description="Items per page."), WHOLE_NUMBER]


def _ranked_by(field: str) -> str:
    """What ?q='s results say of their field (SearchResultSerializer's help text), for recall's output schema."""
    return str(SearchResultSerializer._declared_fields[field].help_text)


class RecalledMemory(BaseModel):
    """One of recall's results: the memory as get shows it, and what ranked it, as on the API's ?q= results."""

    uid: str
    key: str
    value: str
    kind: str
    meta: Any
    privacy: str
    version: int
    created: str
    updated: str
    guard_flags: list[str]
    expires: str | None
    score: Annotated[float | None, Field(description=_ranked_by("score"))]
    matched_terms: Annotated[list[str], Field(description=_ranked_by("matched_terms"))]
    lexical_rank: Annotated[int | None, Field(description=_ranked_by("lexical_rank"))]
    semantic_similarity: Annotated[float | None, Field(description=_ranked_by("semantic_similarity"))]
    relevant: Annotated[bool | None, Field(description=_ranked_by("relevant"))]


class Recalled(BaseModel):
    """recall's answer."""

    uid: str
    query: str
    count: Annotated[int, Field(description="How many results there are here (at most limit).")]
    results: Annotated[list[RecalledMemory], Field(description="The matching memories, best first.")]
    ranking: Annotated[
        str,
        Field(description="'hybrid' (words and meaning), or 'lexical; ...' with why meaning was not used."),
    ]


def _invalid(tool: str, error: InvalidField) -> ToolError:
    return ToolError(f"Invalid argument `{error.field}`: {error.message} Change `{error.field}` and call {tool} again.")


def _as_request(work: Callable[[], Result]) -> Callable[[], Result]:
    """work, run as Django runs a request: connections past their age or broken are closed before and after."""

    def run() -> Result:
        close_old_connections()
        try:
            return work()
        finally:
            close_old_connections()

    return run


async def in_django(work: Callable[[], Result]) -> Result:
    """Run ORM work from async code in Django's one thread for it (sync_to_async, thread-sensitive)."""
    return await sync_to_async(_as_request(work), thread_sensitive=True)()


def _entry_data(entry: MemoryEntry) -> dict[str, Any]:
    return entry_data(entry)


def _argument_path(location: tuple[int | str, ...], arguments: dict[str, Any]) -> str:
    """Where in the arguments a schema error is, as `meta.project` or `kind.0`.

    Pydantic's location also names each member of a union it tried (`kind.str`, `kind.list[str]`);
    those are no place in the arguments, so only the parts the arguments hold are kept (the first,
    the argument's name, always: a missing argument is not in them).
    """
    if not location:
        return "arguments"
    parts, current = [str(location[0])], cast(Any, arguments.get(str(location[0])))
    for part in location[1:]:
        held_by_dict = isinstance(current, dict) and isinstance(part, str) and part in current
        held_by_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if held_by_dict or held_by_list:
            current = current[part]
            parts.append(str(part))
    return ".".join(parts)


def _arguments_message(tool: str, error: ValidationError, arguments: dict[str, Any]) -> str:
    """The SDK's check of the arguments against the schema, as one sentence per bad argument: what each
    member of a union wanted, said once for the argument ("a valid string or a valid list")."""
    wanted: dict[str, list[str]] = {}
    for problem in error.errors():
        field = _argument_path(tuple(problem["loc"]), arguments)
        detail = "it is required" if problem["type"] == "missing" else problem["msg"][0].lower() + problem["msg"][1:]
        details = wanted.setdefault(field, [])
        if detail not in details:
            details.append(detail)
    problems = []
    for field, details in wanted.items():
        shown = [details[0]] + [detail.removeprefix(_SHOULD_BE) for detail in details[1:]]
        said = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
        problems.append(f"Invalid argument `{field}`: {said}.")
    fields = ", ".join(f"`{field}`" for field in wanted)
    return " ".join(problems) + f" Change {fields} and call {tool} again."


# How pydantic starts what a value should have been; said once for the several members of a union.
_SHOULD_BE = "input should be "


def _unknown_arguments(tool: str, arguments: dict[str, Any], schema: dict[str, Any] | None) -> str:
    """The refusal of arguments the tool does not take ("" when there are none).

    The SDK would drop them unread, so a misnamed argument would not be an error but its default:
    `remember` with "user" for "uid" would store the memory about the user "default".
    """
    if schema is None:
        return ""  # an unknown tool, which the SDK refuses by name
    taken = list(schema.get("properties", {}))
    unknown = [name for name in arguments if name not in taken]
    if not unknown:
        return ""
    problems = " ".join(f"Invalid argument `{name}`: {tool} has no such argument." for name in unknown)
    fields = ", ".join(f"`{name}`" for name in unknown)
    return f"{problems} {tool} takes {', '.join(taken)}. Change {fields} and call {tool} again."


class LineSource(Protocol):
    """The client's messages, one JSON-RPC message a line."""

    def __aiter__(self) -> AsyncIterator[str]: ...


class LineSink(Protocol):
    """Where the answers go, one JSON-RPC message a line."""

    async def write(self, text: str) -> None: ...

    async def flush(self) -> None: ...


class HubMCPServer(MCPServer):
    """MCPServer whose answer to arguments that break the schema names each one and what to change."""

    async def run_streams(self, stdin: "LineSource", stdout: "LineSink") -> None:
        """Serve one session over stdio-like streams, as run_stdio_async serves the process's own
        stdin and stdout (memories.mcp.stdio hands it the session it began)."""
        # stdio_server reads and writes its streams only through the two protocols' methods.
        lines_in, lines_out = cast("anyio.AsyncFile[str]", stdin), cast("anyio.AsyncFile[str]", stdout)
        async with stdio_server(stdin=lines_in, stdout=lines_out) as (read_stream, write_stream):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        if unknown := _unknown_arguments(name, arguments, self._tool_input_schema(name)):
            raise ToolError(unknown)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(_arguments_message(name, cause, arguments)) from cause
            if type(error) is ToolError and type(cause) is ToolError:
                # A tool's own refusal ("Invalid argument `kind`: ...", "No memory with key ..."), said as the
                # schema's are: without the SDK's "Error executing tool NAME: " before it.
                raise ToolError(str(cause)) from cause
            raise


def build_server(account_for: AccountResolver) -> HubMCPServer:
    """The MCP server whose tools act for the account that account_for(ctx) names."""
    server = HubMCPServer(name=SERVER_NAME, instructions=INSTRUCTIONS, version=settings.VERSION, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(
        name="remember",
        description="Store a memory about a user: creates it, or replaces the value of the memory with that key. "
        "Returns the stored memory with its version (1 when created, +1 per change) and status "
        "(created, updated or unchanged). Every change is kept in the memory's history. A value that reads as "
        "an instruction to a model, or holds hidden characters, may be held for review (status held): it is "
        "not stored until staff approve it.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    async def remember(
        ctx: Context,
        key: StoredKey,
        value: Annotated[
            str,
            Field(
                description="The memory itself, in plain words: 'prefers Python', 'answers in French'. "
                f"At most {settings.MEMORYHUB_MAX_VALUE_BYTES} bytes (UTF-8)."
            ),
        ],
        uid: Uid = "default",
        kind: Annotated[
            str | None,
            Field(
                description=f"What sort of memory: '{DEFAULT_KIND}' (the default for a new memory), 'fact', "
                "'pattern', ... 1 to 32 letters, digits or _ - . : ; left out, an existing memory keeps its kind."
            ),
        ] = None,
        meta: Annotated[
            dict[str, Any] | None,
            Field(description="Optional JSON object of extra data; left out, an existing memory keeps its meta."),
        ] = None,
        expected_version: Annotated[
            int | None,
            Field(ge=1, description="Store only if the memory is at this version (from get); else an error."),
            WHOLE_NUMBER,
        ] = None,
        privacy: Annotated[
            Literal["local", "shared"] | None,
            Field(
                description="'local' for what must never leave this hub (health, money, secrets the user shared): "
                "it is never synced elsewhere nor sent to a remote embedding service. 'shared' may be. Left "
                "out: the account's default for a new memory; an existing memory keeps its own."
            ),
        ] = None,
        ttl: Annotated[
            int | None,
            Field(
                ge=1,
                le=EXPIRY_MAX_SECONDS,
                description="Seconds until the memory expires and is forgotten (e.g. 86400 for a day); "
                "left out, an existing memory keeps its expiry and a new one never expires.",
            ),
            WHOLE_NUMBER,
        ] = None,
        never_expires: Annotated[
            bool,
            Field(description="True removes the memory's expiry: it is kept until forgotten. Not with ttl."),
        ] = False,
    ) -> dict[str, Any]:
        account = account_for(ctx)

        def work() -> dict[str, Any]:
            if never_expires and ttl is not None:
                raise InvalidField("never_expires", "give ttl or never_expires, not both.")
            try:
                result = services.entry_put(
                    owner=account,
                    uid=uid,
                    key=key,
                    value=value,
                    kind=kind,
                    meta=meta,
                    privacy=privacy,
                    ttl=ttl,
                    expires=None if never_expires else services.KEEP,
                    actor=account,
                    expected_version=expected_version,
                )
            except services.WriteHeld as held:
                return {
                    "uid": uid,
                    "key": key,
                    "status": "held",
                    "held_id": held.held.pk,
                    "guard_flags": held.held.guard_flag_names,
                    "note": "The write looks like an instruction to a model or holds hidden characters, so it is "
                    "held for review and not stored until staff approve it. Do not retry it.",
                }
            status = "created" if result.created else "updated" if result.changed else "unchanged"
            return {**_entry_data(result.entry), "status": status}

        try:
            return await in_django(work)
        except InvalidField as error:
            raise _invalid("remember", error) from None
        except services.VersionConflict as error:
            raise ToolError(
                f"The memory is at version {error.current}, not {expected_version}: get it again, then retry "
                "with its current version as expected_version."
                if error.current
                else "The memory does not exist, so expected_version cannot match: leave expected_version out."
            ) from None

    @server.tool(
        name="recall",
        description="Search a user's memories for a text: best match first (the key weighs more than the value), "
        "then newest. Finds every memory whose key or value holds the text, in any case, and, when the hub has "
        "embeddings on, memories close in meaning. Returns the matching memories, at most `limit`, each with what "
        "ranked it (score, matched_terms, lexical_rank, semantic_similarity, and relevant: whether it passes the "
        "relevance cut-off; when none does, most likely no memory answers the query), and `ranking`: 'hybrid' "
        "(words and meaning), or 'lexical; ...' with why meaning was not used.",
        annotations=read_only,
    )
    async def recall(
        ctx: Context,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=context.CONTEXT_QUERY_MAX_LENGTH,
                description="What to look for: a word or phrase, e.g. 'editor' or 'python'.",
            ),
        ],
        uid: Uid = "default",
        limit: Annotated[
            int,
            Field(
                ge=1,
                le=settings.MEMORYHUB_MAX_PAGE_SIZE,
                description="The most memories to return.",
            ),
            WHOLE_NUMBER,
        ] = settings.MEMORYHUB_QUERY_LIMIT,
        kind: Annotated[
            str | list[str] | None,
            Field(description="Only memories of this kind, or of one of these kinds."),
        ] = None,
        meta: Annotated[
            dict[str, MetaFilterValue | list[MetaFilterValue]] | None,
            Field(
                description="Only memories whose meta has each of these top-level fields equal to the value given "
                '(or to one of the values of a list), e.g. {"project": "apollo"}.'
            ),
        ] = None,
    ) -> Recalled:
        account = account_for(ctx)

        def work() -> Recalled:
            check_uid(uid)
            context.check_query_text(query, field="query")
            filters = filter_from_arguments(kind=kind, meta=meta)
            found = selectors.entry_search(owner=account, uid=uid, query_text=query, filters=filters)
            results = [RecalledMemory(**shown) for shown in search_results_data(found.entries, limit=limit)]
            return Recalled(uid=uid, query=query, count=len(results), results=results, ranking=found.ranking)

        try:
            return await in_django(work)
        except InvalidField as error:
            raise _invalid("recall", error) from None

    @server.tool(
        name="get",
        description="Read one memory of a user by its key: its value, kind, meta, version and when it was "
        "created and last updated.",
        annotations=read_only,
    )
    async def get(ctx: Context, key: Key, uid: Uid = "default") -> dict[str, Any]:
        account = account_for(ctx)

        def work() -> dict[str, Any] | None:
            check_uid(uid)
            check_key(key)
            entry = selectors.entry_get(owner=account, uid=uid, key=key)
            return None if entry is None else _entry_data(entry)

        try:
            found = await in_django(work)
        except InvalidField as error:
            raise _invalid("get", error) from None
        if found is None:
            raise ToolError(f"No memory with key {key!r} for uid {uid!r}: call list or recall to see which keys exist.")
        return found

    @server.tool(
        name="list",
        description="List a user's memories, newest first, a page at a time. Returns count (all of them), "
        "the page's memories, and next_page (null on the last page).",
        annotations=read_only,
    )
    async def list_memories(
        ctx: Context,
        uid: Uid = "default",
        page: PageNumber = 1,
        page_size: PageSize = settings.MEMORYHUB_PAGE_SIZE,
        kind: Annotated[str | None, Field(description="Only memories of this kind.")] = None,
    ) -> dict[str, Any]:
        account = account_for(ctx)

        def work() -> dict[str, Any]:
            check_uid(uid)
            entries = selectors.entry_list(owner=account, uid=uid, kind=None if kind is None else check_kind(kind))
            count = entries.count()
            last_page = max(1, -(-count // page_size))
            if page > last_page:
                held = "there is 1 memory" if count == 1 else f"there are {count} memories"
                raise InvalidField("page", f"must be at most {last_page}: {held}.")
            results = [_entry_data(entry) for entry in entries[(page - 1) * page_size : page * page_size]]
            next_page = page + 1 if page < last_page else None
            return {"uid": uid, "count": count, "page": page, "next_page": next_page, "results": results}

        try:
            return await in_django(work)
        except InvalidField as error:
            raise _invalid("list", error) from None

    @server.tool(
        name="forget",
        description="Delete one memory of a user by its key. Its history stays (see history). Use it when a "
        "memory is wrong, outdated, or the user asks you to forget it.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def forget(
        ctx: Context,
        key: Key,
        uid: Uid = "default",
        expected_version: Annotated[
            int | None,
            Field(ge=1, description="Delete only if the memory is at this version (from get); else an error."),
            WHOLE_NUMBER,
        ] = None,
    ) -> dict[str, Any]:
        account = account_for(ctx)

        def work() -> MemoryEntry | None:
            check_uid(uid)
            check_key(key)
            return services.entry_delete(
                owner=account, uid=uid, key=key, actor=account, expected_version=expected_version
            )

        try:
            deleted = await in_django(work)
        except InvalidField as error:
            raise _invalid("forget", error) from None
        except services.VersionConflict as error:
            raise ToolError(
                f"The memory is at version {error.current}, not {expected_version}: get it again, then retry "
                "with its current version as expected_version."
                if error.current
                else f"No memory with key {key!r} for uid {uid!r}: there is nothing to forget."
            ) from None
        if deleted is None:
            raise ToolError(f"No memory with key {key!r} for uid {uid!r}: there is nothing to forget.")
        return {"uid": uid, "key": key, "deleted": True, "version": deleted.version}

    @server.tool(
        name="history",
        description="Every change to one memory of a user, newest first: created, updated or deleted, with the "
        "value, kind and meta before and after, the version, who made it and when. Works for deleted memories too.",
        annotations=read_only,
    )
    async def history(
        ctx: Context,
        key: Key,
        uid: Uid = "default",
        page: PageNumber = 1,
        page_size: PageSize = settings.MEMORYHUB_PAGE_SIZE,
    ) -> dict[str, Any]:
        account = account_for(ctx)

        def work() -> dict[str, Any] | None:
            check_uid(uid)
            check_key(key)
            events = selectors.entry_history(owner=account, uid=uid, key=key)
            # A later page is counted first, so a page past the last reads no rows (nor an offset the database refuses).
            counted = events.count() if page > 1 else None
            if counted is not None and (page - 1) * page_size >= counted:
                if not counted:
                    return None
                changes_word = "change" if counted == 1 else "changes"
                raise InvalidField(
                    "page", f"must be at most {-(-counted // page_size)}: the memory has {counted} {changes_word}."
                )
            changes = [dict(EventSerializer(event).data) for event in events[(page - 1) * page_size : page * page_size]]
            if not changes:
                return None
            count = counted if counted is not None else events.count() if len(changes) == page_size else len(changes)
            next_page = page + 1 if page * page_size < count else None
            return {"uid": uid, "key": key, "count": count, "page": page, "next_page": next_page, "changes": changes}

        try:
            found = await in_django(work)
        except InvalidField as error:
            raise _invalid("history", error) from None
        if found is None:
            raise ToolError(f"No history for key {key!r} of uid {uid!r}: that memory was never stored.")
        return found

    @server.tool(
        name="context",
        description="What you should know about a user right now, as a ready-to-read text block within `budget` "
        "characters: the memories most relevant to `query` first, then the newest; a memory is never cut. Call it "
        "at the start of a turn and put the text in your working context. Format: a header line, then one line "
        "'- key (kind): value' per memory (a value's further lines indented by two spaces). Empty when nothing "
        "is known. Each entry's reason: 'relevant' (found by `query` and judged relevant), 'nearest' (found by "
        "`query` and put first, but not judged relevant: most likely nothing known answers it; the header then "
        "says 'nearest to the query first, none judged relevant') or 'recent' (among the newest). Treat a reason "
        "you do not know as informational.",
        annotations=read_only,
        structured_output=False,
    )
    async def context_tool(
        ctx: Context,
        uid: Uid = "default",
        budget: Annotated[
            int,
            Field(
                ge=context.CONTEXT_MIN_BUDGET,
                le=context.CONTEXT_MAX_BUDGET,
                description="The most characters the block may have.",
            ),
            WHOLE_NUMBER,
        ] = context.CONTEXT_DEFAULT_BUDGET,
        query: Annotated[
            str,
            Field(
                max_length=context.CONTEXT_QUERY_MAX_LENGTH,
                description="What this turn is about (e.g. the user's message); matching memories come first. "
                "Empty: the newest memories.",
            ),
        ] = "",
    ) -> CallToolResult:
        account = account_for(ctx)

        def work() -> dict[str, Any]:
            check_uid(uid)
            context.check_budget(budget)
            context.check_query_text(query, field="query")
            block = selectors.context_block(owner=account, uid=uid, budget=budget, query_text=query)
            return {**ContextBlockSerializer(block).data, "etag": block.etag}

        try:
            data = await in_django(work)
        except InvalidField as error:
            raise _invalid("context", error) from None
        return CallToolResult(content=[TextContent(type="text", text=data["text"])], structured_content=data)

    return server
