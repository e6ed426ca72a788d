"""The MCP server over stdio: a real `manage.py mcp --account NAME` process, driven by the official
SDK's stdio client."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from memories.mcp import stdio
from memories.mcp.stdio import KEPT_ANSWERS_FILE
from tests.memories.mcp_hub import stdio_parameters, stdio_session
from tests.support.hub_process import PROJECT, HubDatabase, create_token, hub_database, hub_environment

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubDatabase]:
    with hub_database(tmp_path_factory.mktemp("mcp-stdio")) as database:
        for name in ("desk", "other"):
            create_token(database, name)
        yield database


@pytest.fixture(scope="module")
def environment(database: HubDatabase) -> dict[str, str]:
    return hub_environment(database)


# How a client piping its lines starts its session: initialize, then initialized.
PIPED_START = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}},
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def _piped(environment: dict[str, str], lines: list[Any], *, timeout: float = 120) -> subprocess.CompletedProcess:
    """`manage.py mcp --account desk` given lines (text as it is, anything else as JSON) on its input, which then
    ends; what it wrote and how it exited."""
    sent = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    return subprocess.run(
        [sys.executable, "manage.py", "mcp", "--account", "desk"],
        cwd=PROJECT,
        env=environment,
        input=sent,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_process_lists_the_tools_and_acts_for_its_account(environment):
    async def scenario() -> tuple:
        async with stdio_session(environment, "desk") as session:
            tools = (await session.list_tools()).tools
            stored = await session.call_tool("remember", {"key": "language", "value": "prefers Python"})
            block = await session.call_tool("context", {"query": "python", "budget": 200})
            bad = await session.call_tool("recall", {"query": "", "limit": 0})
            return tools, stored, block, bad

    tools, stored, block, bad = anyio.run(scenario)

    assert [tool.name for tool in tools] == ["remember", "recall", "get", "list", "forget", "history", "context"]
    assert stored.structured_content["status"] == "created"
    assert (
        block.content[0].text
        == "Memories about default (1 of 1, most relevant first):\n- language (preference): prefers Python\n"
    )
    assert bad.is_error
    assert "`query`" in bad.content[0].text and "`limit`" in bad.content[0].text


def test_another_accounts_process_sees_none_of_its_memories(environment):
    async def scenario() -> tuple:
        async with stdio_session(environment, "desk") as desk:
            await desk.call_tool("remember", {"uid": "alice", "key": "editor", "value": "uses vim"})
        async with stdio_session(environment, "other") as other:
            recalled = await other.call_tool("recall", {"uid": "alice", "query": "vim"})
            got = await other.call_tool("get", {"uid": "alice", "key": "editor"})
            listed = await other.call_tool("list", {"uid": "alice"})
        async with stdio_session(environment, "desk") as desk:
            mine = await desk.call_tool("get", {"uid": "alice", "key": "editor"})
        return recalled, got, listed, mine

    recalled, got, listed, mine = anyio.run(scenario)

    assert recalled.structured_content["results"] == []
    assert got.is_error and "call list or recall" in got.content[0].text
    assert listed.structured_content["count"] == 0
    assert mine.structured_content["value"] == "uses vim"


def test_an_unknown_account_stops_the_command_with_a_sentence_saying_what_to_do(environment):
    completed = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--account", "nobody"],
        cwd=PROJECT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )

    assert completed.returncode != 0
    assert "create_account nobody" in completed.stderr


def test_a_change_made_over_stdio_is_written_with_its_history(database, environment):
    async def scenario() -> None:
        async with stdio_session(environment, "desk") as desk:
            await desk.call_tool("remember", {"uid": "zoe", "key": "city", "value": "Paris", "kind": "fact"})
            await desk.call_tool("remember", {"uid": "zoe", "key": "city", "value": "Lyon"})

    anyio.run(scenario)

    entries = database.rows("SELECT value, kind, version FROM memories_memoryentry WHERE uid = 'zoe'")
    events = database.rows(
        "SELECT action, version, value_after FROM memories_memoryevent WHERE uid = 'zoe' ORDER BY id"
    )
    assert entries == [("Lyon", "fact", 2)]
    assert events == [("create", 1, "Paris"), ("update", 2, "Lyon")]


def test_requests_sent_just_before_the_input_ends_are_answered_before_the_process_exits(database, environment):
    # A client that writes its requests and closes its end at once: each is answered as it was carried out.
    remember = {"name": "remember", "arguments": {"uid": "pipe", "key": "city", "value": "Porto"}}
    get = {"name": "get", "arguments": {"uid": "pipe", "key": "city"}}
    completed = _piped(
        environment,
        [
            *PIPED_START,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": remember},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": get},
        ],
    )
    answers = {answer["id"]: answer for answer in map(json.loads, completed.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3]
    assert answers[2]["result"]["structuredContent"]["status"] == "created"
    assert answers[3]["result"]["structuredContent"]["value"] == "Porto"
    assert database.rows("SELECT value FROM memories_memoryentry WHERE uid = 'pipe'") == [("Porto",)]


def test_a_request_cancelled_before_the_input_ends_is_not_waited_for(environment):
    recall = {"name": "recall", "arguments": {"uid": "pipe", "query": "anything"}}
    cancel = {"requestId": 5, "reason": "changed my mind"}
    # The SDK answers no cancelled request: waited for, the process would take its 30 s to end.
    completed = _piped(
        environment,
        [
            *PIPED_START,
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": recall},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel},
        ],
        timeout=20,
    )
    assert completed.returncode == 0
    assert 1 in [json.loads(line).get("id") for line in completed.stdout.splitlines()]


def test_a_line_that_is_no_json_rpc_message_is_answered_with_its_error_and_the_session_goes_on(environment):
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    completed = _piped(environment, ["not json", "", '{"foo": 1}', "[1, 2]", '{"jsonrpc": "2.0", "id": 8}', ping])
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    invalid = {"code": -32600, "message": "Invalid request: the line is not a JSON-RPC 2.0 message."}
    # Each in the order asked; the blank line is skipped, as a JSON-RPC stream's separator.
    assert answers == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": stdio.NOT_JSON}},
        {"jsonrpc": "2.0", "id": None, "error": invalid},
        {"jsonrpc": "2.0", "id": None, "error": invalid},
        {"jsonrpc": "2.0", "id": 8, "error": invalid},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
    ]


def _fresh_data_dir(database: HubDatabase, data_dir: Path) -> dict[str, str]:
    """The environment of a process on the same database whose data folder (and kept answers) is data_dir."""
    return hub_environment(database, DATABASE_URL=database.url, MEMORYHUB_DATA_DIR=str(data_dir))


async def _start(environment: dict[str, str], *, after_list: Any = None) -> tuple[Any, list, Any]:
    """(initialize result, tools listed first, what after_list(session, changed) returned) of one start."""
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        for candidate in (message, getattr(message, "root", None)):
            if getattr(candidate, "method", None) == "notifications/tools/list_changed":
                changed.set()

    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(stdio_parameters(environment, "desk"), errlog=quiet) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            started = await session.initialize()
            tools = (await session.list_tools()).tools
            later = await after_list(session, changed) if after_list else None
    return started, tools, later


def test_a_later_start_answers_with_the_answers_the_sdk_gave_before(database, tmp_path):
    environment = _fresh_data_dir(database, tmp_path)

    first_started, first_tools, _ = anyio.run(_start, environment)
    assert (tmp_path / KEPT_ANSWERS_FILE).exists()
    again_started, again_tools, _ = anyio.run(_start, environment)

    assert again_started.model_dump() == first_started.model_dump()
    assert [tool.model_dump() for tool in again_tools] == [tool.model_dump() for tool in first_tools]


def test_kept_answers_that_went_stale_are_replaced_and_the_client_told(database, tmp_path):
    environment = _fresh_data_dir(database, tmp_path)
    _, sdk_tools, _ = anyio.run(_start, environment)
    kept_path = tmp_path / KEPT_ANSWERS_FILE
    kept = json.loads(kept_path.read_text())
    for answers in kept["versions"].values():
        answers["tools"]["tools"][0]["description"] = "An older description."
    kept_path.write_text(json.dumps(kept))

    async def list_once_told(session: ClientSession, changed: anyio.Event) -> list:
        with anyio.fail_after(120):
            await changed.wait()
        return (await session.list_tools()).tools

    _, stale_tools, fresh_tools = anyio.run(lambda: _start(environment, after_list=list_once_told))

    assert stale_tools[0].description == "An older description."
    assert [tool.model_dump() for tool in fresh_tools] == [tool.model_dump() for tool in sdk_tools]
    rewritten = json.loads(kept_path.read_text())
    assert all(
        answers["tools"]["tools"][0]["description"] != "An older description."
        for answers in rewritten["versions"].values()
    )


def test_answers_kept_ahead_of_the_first_start_are_the_ones_the_sdk_gives(database, tmp_path):
    """`manage.py mcp --keep-answers` (make install, make migrate) keeps the answers of every handshake version
    before any start; the first start answers its client with them, and the SDK, once loaded, finds nothing
    to change."""
    ahead = _fresh_data_dir(database, tmp_path / "ahead")
    keep = [sys.executable, "manage.py", "mcp", "--keep-answers"]
    completed = subprocess.run(keep, cwd=PROJECT, env=ahead, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    kept_path = tmp_path / "ahead" / KEPT_ANSWERS_FILE
    kept = kept_path.read_text()
    assert sorted(json.loads(kept)["versions"]) == sorted(HANDSHAKE_PROTOCOL_VERSIONS)

    started, tools, _ = anyio.run(_start, ahead)
    sdk_started, sdk_tools, _ = anyio.run(_start, _fresh_data_dir(database, tmp_path / "without"))

    assert started.model_dump() == sdk_started.model_dump()
    assert [tool.model_dump() for tool in tools] == [tool.model_dump() for tool in sdk_tools]
    assert kept_path.read_text() == kept
    again = subprocess.run([*keep, "-v", "1"], cwd=PROJECT, env=ahead, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"The answers kept in {kept_path} are up to date.\n"


def test_a_line_nested_too_deeply_or_naming_no_valid_id_is_answered_and_the_session_goes_on(environment, database):
    def remember(key: str) -> dict[str, Any]:
        return {"name": "remember", "arguments": {"uid": "nesting", "key": key, "value": "tea"}}

    deep = {"name": "remember", "arguments": {"uid": "nesting", "key": "deep", "value": "v", "meta": "NESTED"}}
    deep_line = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": deep})
    deep_line = deep_line.replace('"NESTED"', "[" * 30000 + "]" * 30000)
    completed = _piped(
        environment,
        [
            *PIPED_START,
            deep_line,
            {"jsonrpc": "2.0", "id": 1.5, "method": "tools/call", "params": remember("fraction")},
            {"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": remember("boolean")},
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": remember("kept")},
        ],
    )
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    no_id = {"code": -32600, "message": "Invalid request: id must be a string or a whole number."}
    # Each refused line answered once, with id null (a line refused while the SDK loads may be answered before one
    # the SDK's reader refuses; the SDK's own answers may come before or after them).
    refused = sorted((answer for answer in answers if "error" in answer), key=lambda answer: answer["error"]["code"])
    assert refused == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": stdio.NOT_JSON}},
        {"jsonrpc": "2.0", "id": None, "error": no_id},
        {"jsonrpc": "2.0", "id": None, "error": no_id},
    ]
    [kept] = [answer for answer in answers if answer.get("id") == 7]
    assert kept["result"]["structuredContent"]["status"] == "created"
    assert completed.returncode == 0
    assert database.rows("SELECT key FROM memories_memoryentry WHERE uid = 'nesting'") == [("kept",)]


def test_an_unknown_account_is_named_in_the_answer_to_every_call_not_only_on_standard_error(environment):
    # The kept answers may take the client's initialize and tools/list: the first request they cannot answer is
    # where the client learns why, in the error answering it (the process went away: "Connection closed").
    async def scenario() -> MCPError | None:
        parameters = stdio_parameters(environment, "nobody")
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            try:
                await session.initialize()
                await session.list_tools()
                await session.call_tool("remember", {"key": "k", "value": "v"})
            except MCPError as error:
                return error
        return None

    refused = anyio.run(scenario)
    assert refused is not None
    assert "No active account 'nobody': create it with `./hub create_account nobody`" in str(refused)


def test_a_request_naming_no_valid_id_is_refused_before_the_sdk_loads_and_a_response_is_not_answered(environment):
    # Sent at once after the handshake, the tools/list may be answered from the kept answers, while the SDK loads:
    # never under an id the protocol does not take. A client's error response (id null) is answered by nothing.
    completed = _piped(
        environment,
        [
            *PIPED_START,
            {"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
            {"jsonrpc": "2.0", "id": 9, "method": "ping"},
        ],
    )
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    no_id = {"code": -32600, "message": "Invalid request: id must be a string or a whole number."}
    assert [answer for answer in answers if "error" in answer] == [{"jsonrpc": "2.0", "id": None, "error": no_id}]
    assert sorted(answer["id"] for answer in answers if "result" in answer) == [1, 9]


def test_the_check_script_of_the_agents_guide_starts_the_server_with_the_configurations_env(database, tmp_path):
    # The script as docs/AGENTS.md prints it, run with none of the hub's settings in its own environment: the
    # server finds the hub's database only through the configuration's "env" block, as a client would start it.
    guide = (PROJECT / "docs" / "AGENTS.md").read_text()
    script = guide[guide.index("this script (`check_mcp_config.py`)") :].split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "check_mcp_config.py").write_text(script)
    hub_settings = {**database.env, "SECRET_KEY": hub_environment(database)["SECRET_KEY"]}
    create_token(database, "guide")  # an account of its own: the script's alice holds only what it stores
    server = {"command": str(PROJECT / "hub"), "args": ["mcp", "--account", "guide"], "env": hub_settings}
    (tmp_path / "config.json").write_text(json.dumps({"mcpServers": {"memoryhub": server}}))
    bare = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "SECRET_KEY")}
    bare = {name: value for name, value in bare.items() if not name.startswith(("MEMORYHUB_", "HONCHO_"))}

    checked = subprocess.run(
        [sys.executable, "check_mcp_config.py", "config.json"],
        cwd=tmp_path,
        env=bare,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert checked.returncode == 0, checked.stderr[-2000:]
    tools, header, memory = checked.stdout.splitlines()
    assert tools == "['remember', 'recall', 'get', 'list', 'forget', 'history', 'context']"
    assert header.startswith("Memories about alice (1 of 1")
    assert memory == "- language (preference): prefers Python"
