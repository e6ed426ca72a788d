"""The MCP server over stdio (`manage.py mcp --account NAME`), answering as soon as the process starts.

A desktop client starts the process and waits for the answers to `initialize` and `tools/list`;
loading Django and the SDK (a few hundred protocol models) takes seconds of CPU. So manage.py hands
`mcp --account NAME` to serve() before Django is set up: it loads Django, the account and the SDK's
server in a thread, and meanwhile answers `initialize` and `tools/list` with the answers the SDK
gave to the same protocol version the last time (kept in the data folder as KEPT_ANSWERS_FILE,
with a fingerprint of the SDK's version, the tools' code and the MEMORYHUB_* settings: a change to
any of them and nothing kept is used). Any other message waits for the SDK.

When the SDK's server is loaded it takes over the session: it reads the client's `initialize`
again under an id of its own, the client's `notifications/initialized` and a `tools/list` of its
own (the answers to those two are not sent: the client has them, and they refresh the kept
answers), then every message the client sent meanwhile and sends after, and answers them itself.
Should the tools it lists differ from the kept ones the client was given, the client is sent
`notifications/tools/list_changed`.

Without kept answers (a new protocol version, a changed fingerprint, a data folder never prepared)
every message waits for the SDK, as it would without this module. So that the first start after an
install or an upgrade has them too, `manage.py mcp --keep-answers` (which `make install` and `make
migrate` run) asks the SDK's server for its answers to each protocol version of the initialize
handshake, with no client, and keeps them (keep_answers); it does nothing when the kept answers are
up to date. Only the standard library is imported here before the thread has loaded the rest.
"""

import hashlib
import importlib.util
import itertools
import json
import os
import select
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

if TYPE_CHECKING:
    from memories.mcp.tools import HubMCPServer

KEPT_ANSWERS_FILE = "mcp-stdio.json"
# The ids the server's own replayed requests go under (a client's ids are its own numbers or strings).
REPLAY_INITIALIZE_ID = "memoryhub-replay-initialize"
REPLAY_TOOLS_ID = "memoryhub-replay-tools-list"
# How often the waiting loop looks whether the thread has finished loading, in seconds.
LOADED_POLL_SECONDS = 0.05
# JSON-RPC 2.0's codes for a line that is not JSON, and for JSON that is no request, notification or response.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
# keep_answers: how long the SDK's server may take to answer one protocol version with no client.
KEEP_ANSWERS_SECONDS = 60.0
# How keep_answers introduces itself in the initialize it asks the SDK's server (the answer does not depend on it).
KEEP_ANSWERS_CLIENT = {"name": "memoryhub-keep-answers", "version": "1"}
READ_SIZE = 65536
# When the client's input ends: how long the requests it sent may still take to be answered, and how often that is
# looked at, in seconds.
END_OF_INPUT_SECONDS = 30.0
UNANSWERED_POLL_SECONDS = 0.01
# The files whose content shapes the answers to initialize and tools/list.
FINGERPRINT_FILES = (
    "memories/mcp/tools.py",
    "memories/mcp/stdio.py",
    "memories/context.py",
    "memories/models.py",
    "memoryhub/settings.py",
)
BASE_DIR = Path(__file__).resolve().parent.parent.parent


def quick_account(arguments: list[str]) -> str | None:
    """The account of `mcp --account NAME` (or --account=NAME) when that is all the command line says;
    None for anything else (help, other options), which the Django command handles."""
    if len(arguments) == 2 and arguments[0] == "--account" and arguments[1]:
        return arguments[1]
    if len(arguments) == 1 and arguments[0].startswith("--account=") and len(arguments[0]) > len("--account="):
        return arguments[0].removeprefix("--account=")
    return None


def data_dir() -> Path:
    """The data folder, as memoryhub.settings names it (read here without loading the settings)."""
    return Path(os.environ.get("MEMORYHUB_DATA_DIR") or BASE_DIR / "data")


def fingerprint() -> str:
    """What the kept answers were made from: the SDK's installed version, the code of the tools and
    the MEMORYHUB_* environment. Read without importing any of it."""
    digest = hashlib.sha256()
    for package in ("mcp", "mcp_types"):
        spec = importlib.util.find_spec(package)
        location = Path(spec.origin).parent.parent if spec and spec.origin else None
        versions = sorted(path.name for path in location.glob(f"{package}-*.dist-info")) if location else []
        digest.update(repr((package, versions)).encode())
    for name in FINGERPRINT_FILES:
        try:
            digest.update((BASE_DIR / name).read_bytes())
        except OSError:
            digest.update(b"missing " + name.encode())
    settings = sorted((name, value) for name, value in os.environ.items() if name.startswith("MEMORYHUB_"))
    digest.update(repr((sys.version, settings)).encode())
    return digest.hexdigest()


@dataclass
class KeptAnswers:
    """The SDK's answers to initialize and tools/list, by the protocol version the client asked for."""

    path: Path
    stamp: str
    by_version: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path, stamp: str) -> "KeptAnswers":
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(path, stamp)
        if not isinstance(stored, dict) or stored.get("fingerprint") != stamp:
            return cls(path, stamp)
        versions = stored.get("versions")
        return cls(path, stamp, versions if isinstance(versions, dict) else {})

    def answers(self, version: object) -> dict[str, Any] | None:
        kept = self.by_version.get(version) if isinstance(version, str) else None
        if isinstance(kept, dict) and isinstance(kept.get("initialize"), dict) and isinstance(kept.get("tools"), dict):
            return kept
        return None

    def keep(self, version: str, initialize: dict[str, Any], tools: dict[str, Any]) -> None:
        """Store the answers for version, if they changed; a data folder that cannot be written keeps none."""
        if self.by_version.get(version) == {"initialize": initialize, "tools": tools}:
            return
        self.by_version[version] = {"initialize": initialize, "tools": tools}
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps({"fingerprint": self.stamp, "versions": self.by_version}), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as error:
            sys.stderr.write(f"memoryhub: the MCP answers cannot be kept in {self.path} ({error}); starts stay slow\n")


class Wire:
    """The client's side of the process: its messages in (lines), the answers out.

    fd 0 and fd 1 are moved aside while the server runs (0 reads the null device, 1 writes to
    stderr), as the SDK's own stdio transport does, so nothing that prints can break the stream.
    """

    def __init__(self) -> None:
        self.input_fd = os.dup(0)
        self.output_fd = os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        self.buffer = b""
        self.ended = False
        self.lock = threading.Lock()

    def ready(self, timeout: float) -> bool:
        """Whether a read would not block (a line, or the end), waiting at most timeout seconds."""
        return b"\n" in self.buffer or self.ended or bool(select.select([self.input_fd], [], [], timeout)[0])

    def read_line(self) -> bytes | None:
        """The next line, blocking until it is whole; None at the end of the input."""
        while b"\n" not in self.buffer:
            if self.ended:
                rest, self.buffer = self.buffer, b""
                return rest or None
            chunk = os.read(self.input_fd, READ_SIZE)
            if not chunk:
                self.ended = True
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line + b"\n"

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        with self.lock:
            while data:
                data = data[os.write(self.output_fd, data) :]


class Client(Protocol):
    """Where the SDK's server reads the client's lines from and writes its answers to."""

    def read_line(self) -> bytes | None: ...

    def send(self, message: dict[str, Any]) -> None: ...

    def write(self, text: str) -> None: ...


@dataclass
class Session:
    """What the client said before the SDK's server took over."""

    initialize: dict[str, Any] | None = None  # answered from the kept answers
    initialized: bytes | None = None  # the client's notifications/initialized, to replay
    tools_answered: bool = False  # a tools/list answered from the kept answers
    waiting: list[bytes] = field(default_factory=list)  # for the SDK, in order


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def named_id(message: object) -> str | int | None:
    """The id a JSON-RPC message names, as an error answering it carries it: a string or a number, else None."""
    named = message.get("id") if isinstance(message, dict) else None
    return named if isinstance(named, str | int) and not isinstance(named, bool) else None


def error_answer(code: int, message: str, named: str | int | None = None, data: object = None) -> dict[str, Any]:
    """A JSON-RPC error answer: code and message (and data, when given), under the id named (null when none is)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": named, "error": error}


def names_no_valid_id(message: object) -> bool:
    """Whether message is a request holding an id that is no string or whole number (1.5, true, null, an object):
    the SDK would take it for a notification, carry nothing out and answer nothing. (A response's id may be null:
    an error answering what had no id.)"""
    return isinstance(message, dict) and "method" in message and "id" in message and named_id(message) is None


# What _refusal gives for a line that is left without an answer, and not handed to the SDK.
UNANSWERED: dict[str, Any] = {}
# What answers a line or body that holds an id the protocol does not take.
NO_VALID_ID = "Invalid request: id must be a string or a whole number."
# What answers a line or body that is no JSON the server reads.
NOT_JSON = "Parse error: not JSON the server reads (invalid, nested too deeply, or a number of over 4,300 digits)."


def _refusal(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error that answers a line that is no JSON-RPC message (a parse error, or an invalid request,
    with its id when it names one), None for a message the SDK takes, UNANSWERED for a response the SDK does not
    take (left without an answer). Called once the SDK is loaded."""
    import mcp_types
    import pydantic

    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except pydantic.ValidationError:
        taken = False
    else:
        taken = True
        if b'"id"' not in line:
            return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return error_answer(PARSE_ERROR, NOT_JSON)
    if names_no_valid_id(message):
        return error_answer(INVALID_REQUEST, NO_VALID_ID)
    if taken:
        return None
    if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
        # A response (an error with id null, answering a line of ours it could not read): nothing answers a response.
        return UNANSWERED
    return error_answer(INVALID_REQUEST, "Invalid request: the line is not a JSON-RPC 2.0 message.", named_id(message))


def answer_until_loaded(wire: Wire, kept: KeptAnswers, loaded: threading.Event) -> Session:
    """Answer initialize and tools/list from the kept answers until the thread has loaded the server.

    Once a message must wait for the SDK (or nothing is kept), every later one waits too, so the
    SDK answers in the order the client asked.
    """
    session = Session()
    while not loaded.is_set():
        if not wire.ready(LOADED_POLL_SECONDS):
            continue
        line = wire.read_line()
        if line is None:
            break
        message = _parse(line)
        method = message.get("method") if message else None
        answers = kept.answers(session.initialize["params"].get("protocolVersion")) if session.initialize else None
        if names_no_valid_id(message):
            # Refused now, as once the SDK is loaded: no kept answer goes under an id the protocol does not take.
            wire.send(error_answer(INVALID_REQUEST, NO_VALID_ID))
        elif session.waiting or message is None:
            session.waiting.append(line)
        elif method == "initialize" and session.initialize is None and "id" in message:
            params = message.get("params")
            first = kept.answers(params.get("protocolVersion")) if isinstance(params, dict) else None
            if first is None:
                session.waiting.append(line)
            else:
                session.initialize = message
                wire.send({"jsonrpc": "2.0", "id": message["id"], "result": first["initialize"]})
        elif method == "notifications/initialized" and answers is not None and session.initialized is None:
            session.initialized = line
        elif method == "tools/list" and answers is not None and session.initialized and "id" in message:
            params = message.get("params")
            if isinstance(params, dict) and params.get("cursor"):
                session.waiting.append(line)
            else:
                session.tools_answered = True
                wire.send({"jsonrpc": "2.0", "id": message["id"], "result": answers["tools"]})
        else:
            session.waiting.append(line)
    return session


class Handover:
    """The SDK's stdio streams over the wire: the replayed start of the session, then the client.

    It notes the SDK's answers to initialize and tools/list (to keep them), and leaves out the
    answers to the server's own replayed requests.
    """

    def __init__(self, wire: Client, kept: KeptAnswers, session: Session) -> None:
        self.wire, self.kept, self.session = wire, kept, session
        self.replay: list[bytes] = []
        self.asked: dict[Any, str] = {}  # request id -> "initialize" or "tools"
        self.version: str | None = None
        self.initialize: dict[str, Any] | None = None
        if session.initialize is not None:
            self.replay.append(json.dumps({**session.initialize, "id": REPLAY_INITIALIZE_ID}).encode() + b"\n")
            if session.initialized is not None:
                self.replay.append(session.initialized)
                tools_list = {"jsonrpc": "2.0", "id": REPLAY_TOOLS_ID, "method": "tools/list"}
                self.replay.append(json.dumps(tools_list).encode() + b"\n")
        self.replay += session.waiting
        # The ids of the requests handed to the SDK and not answered yet.
        self.unanswered: set[Any] = set()

    def _note(self, line: bytes) -> None:
        message = _parse(line)
        if message and message.get("method") == "notifications/cancelled":
            # A request the client cancels is answered by no one.
            params = message.get("params")
            if isinstance(params, dict):
                self.unanswered.discard(params.get("requestId"))
        if not message or not isinstance(message.get("id"), str | int):
            return
        if "method" in message:
            self.unanswered.add(message["id"])
        if message.get("method") == "initialize":
            params = message.get("params")
            self.version = params.get("protocolVersion") if isinstance(params, dict) else None
            self.asked[message["id"]] = "initialize"
        elif message.get("method") == "tools/list" and not (message.get("params") or {}).get("cursor"):
            self.asked[message["id"]] = "tools"

    def __aiter__(self) -> "Handover":
        return self

    async def __anext__(self) -> str:
        import anyio.to_thread

        while True:
            line = self.replay.pop(0) if self.replay else await anyio.to_thread.run_sync(self.wire.read_line)
            if line is None:
                await self._answered()
                raise StopAsyncIteration
            if not line.strip():
                continue
            refusal = _refusal(line)
            if refusal is None:
                break
            if refusal is UNANSWERED:
                continue
            # The SDK would drop the line without a word: JSON-RPC answers it with an error, its id null
            # when the line names none.
            self.wire.send(refusal)
        self._note(line)
        return line.decode("utf-8", errors="replace")

    async def _answered(self) -> None:
        """Wait (at most END_OF_INPUT_SECONDS) until every request handed to the SDK is answered: the input's end
        ends the SDK's session, which answers a request still at work "Connection closed", though its change may
        be made (a client that writes its requests and closes its end at once)."""
        import anyio

        with anyio.move_on_after(END_OF_INPUT_SECONDS):
            while self.unanswered:
                await anyio.sleep(UNANSWERED_POLL_SECONDS)

    async def write(self, text: str) -> None:
        message = json.loads(text)
        answer_id = message.get("id") if isinstance(message, dict) else None
        if isinstance(message, dict) and "method" not in message:
            self.unanswered.discard(answer_id)
        asked = self.asked.pop(answer_id, None) if isinstance(answer_id, str | int) else None
        if asked == "initialize" and isinstance(message.get("result"), dict):
            self.initialize = message["result"]
        elif asked == "tools" and isinstance(message.get("result"), dict) and self.initialize and self.version:
            given = self.kept.answers(self.version)
            self.kept.keep(self.version, self.initialize, message["result"])
            if self.session.tools_answered and given and given["tools"] != message["result"]:
                self.wire.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if answer_id in (REPLAY_INITIALIZE_ID, REPLAY_TOOLS_ID):
            return
        self.wire.write(text)

    async def flush(self) -> None:
        return None


@dataclass
class Loaded:
    server: "HubMCPServer | None" = None
    error: BaseException | None = None
    exit_message: str = ""


def load(account: str, loaded: threading.Event, result: Loaded) -> None:
    """Set Django up, find the account and build the server (in a thread), then set loaded."""
    try:
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.db import connections

        user = get_user_model().objects.filter(username=account, is_active=True).first()
        connections.close_all()
        if user is None:
            result.exit_message = (
                f"CommandError: No active account {account!r}: create it with `./hub create_account {account}`."
            )
            return
        from memories.mcp.tools import build_server

        result.server = build_server(lambda ctx: user)
    except Exception as error:  # noqa: BLE001 - handed to the main thread, which shortens or re-raises it
        result.error = error
    finally:
        loaded.set()


class NoClient:
    """The client side of keep_answers: nothing more comes after the replayed start of the session, whose
    input ends once the SDK's answers for the version are kept (or after KEEP_ANSWERS_SECONDS)."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.answered = threading.Event()

    def read_line(self) -> bytes | None:
        self.answered.wait(KEEP_ANSWERS_SECONDS)
        return None

    def send(self, message: dict[str, Any]) -> None:
        return None

    def write(self, text: str) -> None:
        return None


class KeepingHandover(Handover):
    """A Handover that tells its NoClient when the answers it asked for are kept."""

    def __init__(self, client: NoClient, kept: KeptAnswers, session: Session) -> None:
        super().__init__(client, kept, session)
        self.client = client

    async def write(self, text: str) -> None:
        await super().write(text)
        if self.kept.answers(self.client.version) is not None:
            self.client.answered.set()


def keep_answers() -> bool:
    """Keep the SDK's answers to initialize and tools/list for every protocol version of the handshake in
    the data folder, unless answers kept with the same fingerprint are there already (the SDK, the tools'
    code and the settings have not changed since); whether it asked the SDK. Read without loading Django
    or the SDK when nothing is to be done."""
    kept = KeptAnswers.read(data_dir() / KEPT_ANSWERS_FILE, fingerprint())
    if kept.by_version:
        return False
    import anyio
    import django

    django.setup()
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from memories.mcp.tools import build_server

    def no_account(ctx: object) -> NoReturn:
        raise LookupError("the answers kept ahead of a start call no tool")

    server = build_server(no_account)
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        initialize = {
            "jsonrpc": "2.0",
            "id": REPLAY_INITIALIZE_ID,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": KEEP_ANSWERS_CLIENT},
        }
        initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n"
        session = Session(initialize=initialize, initialized=initialized)
        client = NoClient(version)
        handover = KeepingHandover(client, kept, session)
        anyio.run(server.run_streams, handover, handover)
    return True


def _refuse_every_request(wire: Wire, session: Session, reason: str) -> None:
    """Answer each request still waiting, and each the client sends until its input ends, with an error saying
    reason: a client whose initialize the kept answers took would otherwise see the process end ("Connection
    closed") at its first call, the reason only on a standard error it may never show."""
    for line in itertools.chain(session.waiting, iter(wire.read_line, None)):
        message = _parse(line) if line else None
        if message is not None and "method" in message and named_id(message) is not None:
            wire.send(error_answer(INTERNAL_ERROR, reason, message["id"]))


def serve(account: str, *, on_error: Callable[[BaseException], int]) -> int:
    """Serve the MCP tools over stdio for account until the client closes the input; the exit status."""
    wire = Wire()
    kept = KeptAnswers.read(data_dir() / KEPT_ANSWERS_FILE, fingerprint())
    loaded, result = threading.Event(), Loaded()
    threading.Thread(target=load, args=(account, loaded, result), name="memoryhub-mcp-load", daemon=True).start()
    session = answer_until_loaded(wire, kept, loaded)
    loaded.wait()
    if result.error is not None:
        return on_error(result.error)
    if result.server is None:
        sys.stderr.write(result.exit_message + "\n")
        _refuse_every_request(wire, session, result.exit_message)
        return 1
    import anyio

    handover = Handover(wire, kept, session)
    anyio.run(result.server.run_streams, handover, handover)
    return 0
