"""The HTTP benchmark behind `manage.py benchmark_http`: the hub against the framework's floor, side by side.

One run, on this machine, with Debian's `wrk` as the client (it costs the cores far less than a
Python client would). Every server is `make serve`'s kind (gunicorn with uvicorn workers over
ASGI, the same number of workers), started on a free loopback port over one throwaway database:

- the floor: a small Django project written into a temporary folder, with a bare Django view
  returning a JsonResponse, and a plain DRF APIView with token authentication and a
  ModelSerializer over the same rows (the hub's entries table);
- the hub with its default settings, except a rate limit no client reaches (it still counts
  every request), and 20,000 entries for the user read, embedded as the worker embeds them (so a
  `?q=` search compares its query with all their vectors, as on a hub in use);
- the same two reads under WSGI (gunicorn's sync workers), to show what ASGI costs;
- Honcho, when HONCHO_URL answers: the read of one record as the hub's Honcho backend makes it
  (sessions list filtered by metadata).

Each row: requests per second at 8 connections, and the p50 latency at 1 connection (from
wrk's recorded latencies, through benchmarks.timing.percentile).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dj_database_url

from benchmarks.timing import percentile

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
USER_UID = "bench"
DEFAULT_ENTRIES = 20_000
DEFAULT_WORKERS = 2
DEFAULT_SECONDS = 10.0
BUSY_CONNECTIONS = 8
# The req/s at BUSY_CONNECTIONS is the best of this many runs, each opening its connections anew. gunicorn's
# workers share one listening socket, and the first to wake may accept every connection of a run while the
# other worker idles: the same GET measured 381 and 896 req/s in runs seconds apart, by whether its 8
# connections went to one worker or to both. The best run is the one whose connections reached them all.
BUSY_ROUNDS = 3
COMMON_WORD = "python"  # in every third entry
RARE_WORD = "zanzibar"  # in RARE_COUNT entries
RARE_COUNT = 5
RATE_OUT_OF_REACH = "100000000/minute"
READ_KEY = "k00042"
SECTION_START = "<!-- benchmark_http: start -->"
SECTION_END = "<!-- benchmark_http: end -->"
FILLER = [
    "prefers",
    "tea",
    "answers",
    "in",
    "french",
    "writes",
    "short",
    "notes",
    "uses",
    "vim",
    "likes",
    "jazz",
    "lives",
    "near",
    "the",
    "sea",
]


@dataclass
class Row:
    name: str
    requests_per_second: float | None = None
    p50_ms: float | None = None
    note: str = ""
    errors: int = 0


@dataclass
class Report:
    server: str
    workers: int
    entries: int
    seconds: float
    database: str
    load_before: str
    load_after: str = ""
    # MEMORYHUB_EMBEDDINGS of the hub measured: with them on, the user's entries are embedded before the reads.
    embeddings: str = "local"
    # How the database was made ready after the writes, when it was (PostgreSQL: VACUUM ANALYZE).
    prepared: str = ""
    rows: list[Row] = field(default_factory=list)

    def row(self, name: str) -> Row | None:
        return next((row for row in self.rows if row.name == name), None)

    def measured(self, name: str) -> Row:
        """The row called name, one that every run measures; KeyError when it is missing."""
        row = self.row(name)
        if row is None:
            raise KeyError(name)
        return row


# --- the servers ------------------------------------------------------------------------------

FLOOR_SETTINGS = """
import os
import dj_database_url

SECRET_KEY = "benchmark-floor-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
INSTALLED_APPS = [
    "django.contrib.auth", "django.contrib.contenttypes", "rest_framework", "rest_framework.authtoken", "floor"
]
# Django's startproject middleware, as a plain project has it.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "floor.urls"
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The hub's database, kept open between requests as the hub keeps it.
DATABASES = {"default": dj_database_url.parse(os.environ["FLOOR_DATABASE_URL"], conn_max_age=60)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}
"""

FLOOR_APP = '''
from django.db import models
from django.http import JsonResponse
from django.urls import path
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView


class Entry(models.Model):
    """The hub's entries table, read as it is."""

    owner_id = models.BigIntegerField()
    uid = models.CharField(max_length=255)
    key = models.CharField(max_length=255)
    value = models.TextField()
    kind = models.CharField(max_length=64)
    meta = models.JSONField()
    version = models.PositiveIntegerField()
    created = models.DateTimeField()
    updated = models.DateTimeField()

    class Meta:
        app_label = "floor"
        db_table = "memories_memoryentry"
        managed = False


class EntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = Entry
        fields = ["uid", "key", "value", "kind", "meta", "version", "created", "updated"]


class EntryView(APIView):
    def get(self, request, uid, key):
        entry = Entry.objects.get(owner_id=request.user.pk, uid=uid, key=key)
        return Response(EntrySerializer(entry).data)


def bare(request, owner_id, uid, key):
    row = Entry.objects.filter(owner_id=owner_id, uid=uid, key=key).values(
        "uid", "key", "value", "kind", "meta", "version", "created", "updated"
    ).get()
    return JsonResponse(row)


urlpatterns = [
    path("bare/<int:owner_id>/<str:uid>/<str:key>", bare),
    path("drf/<str:uid>/<str:key>", EntryView.as_view()),
]
'''

FLOOR_ASGI = '''
import os

import django
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "floor.settings")
django.setup(set_prefix=False)


class Handler(ASGIHandler):
    """As the hub's (memoryhub.asgi): the views on the worker's one sync thread, so the
    connection is kept between requests as under WSGI."""

    async def __call__(self, scope, receive, send):
        await self.handle(scope, receive, send)


application = Handler()
'''

FLOOR_WSGI = """
import os
from django.core.wsgi import get_wsgi_application
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "floor.settings")
application = get_wsgi_application()
"""


def _write_floor_project(folder: Path) -> Path:
    package = folder / "floor"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(FLOOR_SETTINGS)
    (package / "urls.py").write_text(FLOOR_APP)
    (package / "asgi.py").write_text(FLOOR_ASGI)
    (package / "wsgi.py").write_text(FLOOR_WSGI)
    return folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen


@contextmanager
def _server(name: str, arguments: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> Iterator[Server]:
    port = _free_port()
    with open(log, "ab") as log_file:
        process = subprocess.Popen(
            [str(BIN / "gunicorn"), *arguments, "--bind", f"127.0.0.1:{port}"],
            cwd=cwd,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield Server(name, port, process)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def _wait_until_up(url: str, headers: dict[str, str], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            request = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")
        time.sleep(0.2)


# --- the hub's data -----------------------------------------------------------------------------

SEED = """
from django.contrib.auth import get_user_model
from memories import services
owner = get_user_model().objects.get(username="bench")
entries, common, rare, rare_count, filler = {arguments}
rare_every = max(entries // rare_count, 1)
operations = []
for number in range(entries):
    words = [filler[(number * 7 + step) % len(filler)] for step in range(6)]
    if number % 3 == 0:
        words.append(common)
    if number % rare_every == 1 and number // rare_every < rare_count:
        words.append(rare)
    operations.append(services.BatchOperation(op="put", key=f"k{number:05d}", value=" ".join(words)))
    if len(operations) == 500:
        services.entries_batch(owner=owner, uid="bench", operations=operations, actor=owner)
        operations = []
if operations:
    services.entries_batch(owner=owner, uid="bench", operations=operations, actor=owner)
"""


@contextmanager
def _database(workdir: Path, database_url: str) -> Iterator[tuple[dict[str, str], str, str]]:
    """The hub's environment for a throwaway database, the floor's DATABASE_URL, and a description."""
    if database_url and dj_database_url.parse(database_url)["ENGINE"].endswith("postgresql"):
        import psycopg

        name = f"memoryhub_benchmark_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        url = database_url.rsplit("/", 1)[0] + "/" + name
        try:
            yield {"DATABASE_URL": url, "MEMORYHUB_DATA_DIR": str(workdir)}, url, "PostgreSQL"
        finally:
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        yield (
            {"DATABASE_URL": "", "MEMORYHUB_DATA_DIR": str(workdir)},
            f"sqlite:///{workdir}/memoryhub.sqlite3",
            "SQLite",
        )


def _vacuum_analyze(database_url: str) -> None:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")


def _manage(env: dict[str, str], *arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=1800
    )
    if completed.returncode != 0:
        raise RuntimeError(f"manage.py {arguments[0]} failed: {completed.stderr[-2000:]}")
    return completed.stdout


# --- wrk ------------------------------------------------------------------------------------------

# Prints every recorded latency (microseconds, with its count) after the run, for percentile().
WRK_DONE = """
done = function(summary, latency, requests)
  io.write("ERRORS ", summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout, "\\n")
  for index = 1, #latency do
    local value, count = latency(index)
    io.write("LATENCY ", value, " ", count, "\\n")
  end
end
"""

# Each PUT creates a key no run wrote before (`run` is set anew for each run of wrk, _wrk): a PUT of a key that
# holds the same value already changes nothing, records nothing, and would cost far less than a write.
WRK_PUT = """
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("PUT", wrk.path .. "put-" .. run .. "-" .. counter, nil,
    '{"value": "written by the benchmark", "kind": "fact"}')
end
"""

WRK_POST_JSON = """
wrk.method = "POST"
wrk.body = [[%s]]
"""


@dataclass
class WrkResult:
    requests_per_second: float
    latencies_ms: list[float]
    errors: int


def _found(pattern: str, output: str, flags: int = 0) -> str:
    """The first group of pattern in wrk's output; RuntimeError naming it when wrk did not print it."""
    match = re.search(pattern, output, flags=flags)
    if match is None:
        raise RuntimeError(f"wrk's output has no line matching {pattern!r}:\n{output}")
    return match.group(1)


def _wrk(
    url: str, *, connections: int, seconds: float, headers: dict[str, str], script: str, workdir: Path
) -> WrkResult:
    run = uuid.uuid4().hex[:8]
    script_path = workdir / f"wrk-{run}.lua"
    # `run` names this run of wrk, for the scripts whose requests must differ from every other run's (WRK_PUT).
    script_path.write_text(f'run = "{run}"\n' + script + WRK_DONE)
    command = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{max(round(seconds), 1)}s",
        "--timeout",
        "10s",
        "-s",
        str(script_path),
    ]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    output = subprocess.run([*command, url], capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    rate = float(_found(r"Requests/sec:\s+([\d.]+)", output))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    latencies: list[float] = []
    for value, count in re.findall(r"^LATENCY (\d+) (\d+)$", output, flags=re.M):
        latencies += [int(value) / 1000] * int(count)
    errors = int(_found(r"^ERRORS (\d+)$", output, flags=re.M)) + (int(non_2xx.group(1)) if non_2xx else 0)
    return WrkResult(rate, latencies, errors)


def hub_rows(entries: int, entry_path: str) -> list[tuple[str, str, str]]:
    """What is measured of the hub, in order: (name, path, wrk script). The PUTs come last: each creates a key
    (tens of thousands in a run), and the reads before them see the user's seeded entries alone."""
    memories = f"/api/v1/users/{USER_UID}/memories/"
    return [
        ("hub: GET one entry", entry_path, ""),
        (f"hub: list page (50 of {entries:,})", memories, ""),
        (f"hub: ?q= rare word ({RARE_COUNT} matches)", f"{memories}?q={RARE_WORD}", ""),
        (f"hub: ?q= common word ({entries // 3 + 1:,} matches)", f"{memories}?q={COMMON_WORD}", ""),
        ("hub: PUT one entry", memories, WRK_PUT),
    ]


# The hub's searches measured a second time with embeddings off: what the words alone cost, beside the targets.
WORDS_ONLY = "hub, words only (MEMORYHUB_EMBEDDINGS=off): "


def words_only_rows(entries: int) -> list[tuple[str, str, str]]:
    """The searches of hub_rows, by words alone: (name, path, wrk script)."""
    return [
        (name.replace("hub: ", WORDS_ONLY, 1), path, script)
        for name, path, script in hub_rows(entries, "")
        if name.startswith("hub: ?q=")
    ]


def _measure(
    name: str, url: str, *, headers: dict[str, str], seconds: float, workdir: Path, script: str = "", note: str = ""
) -> Row:
    # A short warm-up on the same path, so no figure holds a worker's first requests.
    _wrk(url, connections=BUSY_CONNECTIONS, seconds=1, headers=headers, script=script, workdir=workdir)
    rounds = [
        _wrk(url, connections=BUSY_CONNECTIONS, seconds=seconds, headers=headers, script=script, workdir=workdir)
        for _ in range(BUSY_ROUNDS)
    ]
    busy = max(rounds, key=lambda result: result.requests_per_second)
    single = _wrk(url, connections=1, seconds=seconds, headers=headers, script=script, workdir=workdir)
    p50 = percentile(single.latencies_ms, 0.5) if single.latencies_ms else None
    return Row(name, busy.requests_per_second, p50, note, sum(result.errors for result in rounds) + single.errors)


def _honcho_row(honcho_url: str, *, api_key: str, seconds: float, workdir: Path) -> Row:
    name = "Honcho: sessions list by metadata (one record)"
    workspace = f"mh-bench-{uuid.uuid4().hex[:8]}"
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"

    def post(path: str, body: object) -> None:
        request = urllib.request.Request(
            honcho_url + path, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=10):
            pass

    metadata = {"mh": 1, "mh_user": USER_UID, "mh_key": READ_KEY, "mh_value": "the value read"}
    try:
        post("/v3/workspaces", {"id": workspace})
        post(f"/v3/workspaces/{workspace}/sessions", {"id": f"mh-{uuid.uuid4().hex}", "metadata": metadata})
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return Row(name, note=f"skipped: {honcho_url} did not answer ({error})")
    body = json.dumps({"filters": {"metadata": {"mh_user": USER_UID, "mh_key": READ_KEY}}})
    url = f"{honcho_url}/v3/workspaces/{workspace}/sessions/list?page=1&size=1"
    return _measure(name, url, headers=headers, seconds=seconds, workdir=workdir, script=WRK_POST_JSON % body)


# --- the run ------------------------------------------------------------------------------------------


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} cores"


def benchmark_http(
    *,
    entries: int = DEFAULT_ENTRIES,
    workers: int = DEFAULT_WORKERS,
    seconds: float = DEFAULT_SECONDS,
    database_url: str = "",
    honcho_url: str = "",
    honcho_api_key: str = "",
    compare_wsgi: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Report:
    say = progress or (lambda message: None)
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed: apt-get install wrk")
    report = Report(
        server=f"gunicorn with {workers} uvicorn workers (ASGI)",
        workers=workers,
        entries=entries,
        seconds=seconds,
        database="",
        load_before=_load(),
    )
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryhub-benchmark-http-")))
        hub_db_env, floor_database_url, report.database = stack.enter_context(_database(workdir, database_url))
        hub_env = {
            **os.environ,
            "SECRET_KEY": "benchmark-only-not-secret",
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            "MEMORYHUB_RATE_LIMIT": RATE_OUT_OF_REACH,
            "MEMORYHUB_HONCHO_SYNC": "off",
            **hub_db_env,
        }
        hub_env.pop("MEMORYHUB_CACHE_URL", None)
        hub_env.pop("HONCHO_URL", None)
        hub_env.pop("HONCHO_API_KEY", None)
        say(f"migrating a throwaway {report.database} database and writing {entries} entries")
        _manage(hub_env, "migrate", "--noinput", "-v0")
        token = _manage(hub_env, "create_account", "bench").strip().splitlines()[0].strip()
        seed_arguments = repr((entries, COMMON_WORD, RARE_WORD, RARE_COUNT, FILLER))
        _manage(hub_env, "shell", "--no-imports", "-c", SEED.replace("{arguments}", seed_arguments))
        report.embeddings = hub_env.get("MEMORYHUB_EMBEDDINGS", "local").strip().lower()
        if report.embeddings != "off":
            # As the worker does after every write (`make run` starts it beside the server): a search then
            # compares the query with every one of the user's vectors, as it does on a hub in use.
            say(f"embedding the {entries} entries, as the worker does")
            _manage(hub_env, "embed", "--once")
        if report.database == "PostgreSQL":
            # What autovacuum does within a minute of the writes on a hub in use: the planner's statistics (a
            # common word's share among them) and the visibility map. Without it the first reads plan blind,
            # and autovacuum's own run lands in the middle of the measurements.
            say("VACUUM ANALYZE, as autovacuum leaves a hub in use")
            _vacuum_analyze(hub_db_env["DATABASE_URL"])
            report.prepared = "vacuumed and analysed after the writes, as autovacuum leaves a hub in use"
        owner_id = _owner_id(hub_env)
        floor_dir = _write_floor_project(workdir / "floor-project")
        floor_env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "floor.settings",
            "FLOOR_DATABASE_URL": floor_database_url,
            "PYTHONPATH": str(floor_dir),
        }
        auth = {"Authorization": f"Token {token}"}
        asgi = ["-k", "uvicorn_worker.UvicornWorker", "--workers", str(workers)]
        wsgi = ["-k", "sync", "--workers", str(workers)]
        no_log = ["--access-logfile", "/dev/null", "--no-control-socket"]

        entry_path = f"/api/v1/users/{USER_UID}/memories/{READ_KEY}"
        with _server(
            "floor", [*asgi, *no_log, "floor.asgi:application"], cwd=floor_dir, env=floor_env, log=workdir / "floor.log"
        ) as floor:
            base = f"http://127.0.0.1:{floor.port}"
            _wait_until_up(f"{base}/drf/{USER_UID}/{READ_KEY}", auth)
            say("floor: bare Django")
            report.rows.append(
                _measure(
                    "floor: bare Django view + JsonResponse",
                    f"{base}/bare/{owner_id}/{USER_UID}/{READ_KEY}",
                    headers={},
                    seconds=seconds,
                    workdir=workdir,
                )
            )
            say("floor: DRF")
            report.rows.append(
                _measure(
                    "floor: DRF APIView, token auth, ModelSerializer",
                    f"{base}/drf/{USER_UID}/{READ_KEY}",
                    headers=auth,
                    seconds=seconds,
                    workdir=workdir,
                )
            )

        # The hub as make serve runs it: its gunicorn.conf.py (the access log to a file here).
        hub_arguments = [
            "-c",
            "memoryhub/gunicorn.conf.py",
            "--workers",
            str(workers),
            "--access-logfile",
            str(workdir / "hub-access.log"),
        ]
        words_only: list[Row] = []
        if report.embeddings != "off":
            # The same searches by words alone, before the PUTs add entries: what comparing the vectors costs.
            words_env = {**hub_env, "MEMORYHUB_EMBEDDINGS": "off"}
            with _server("hub-words", hub_arguments, cwd=PROJECT, env=words_env, log=workdir / "hub-words.log") as hub:
                base = f"http://127.0.0.1:{hub.port}"
                _wait_until_up(base + entry_path, auth)
                for name, path, _script in words_only_rows(entries):
                    say(name)
                    words_only.append(_measure(name, base + path, headers=auth, seconds=seconds, workdir=workdir))
        with _server("hub", hub_arguments, cwd=PROJECT, env=hub_env, log=workdir / "hub.log") as hub:
            base = f"http://127.0.0.1:{hub.port}"
            _wait_until_up(base + entry_path, auth)
            for name, path, script in hub_rows(entries, entry_path):
                say(name)
                headers = {**auth, "Content-Type": "application/json"} if script else auth
                report.rows.append(
                    _measure(name, base + path, headers=headers, seconds=seconds, workdir=workdir, script=script)
                )
        report.rows += words_only

        if compare_wsgi:
            with _server(
                "floor-wsgi",
                [*wsgi, *no_log, "floor.wsgi:application"],
                cwd=floor_dir,
                env=floor_env,
                log=workdir / "floor-wsgi.log",
            ) as floor:
                base = f"http://127.0.0.1:{floor.port}"
                _wait_until_up(f"{base}/drf/{USER_UID}/{READ_KEY}", auth)
                say("floor: DRF under WSGI")
                report.rows.append(
                    _measure(
                        "floor: DRF, under WSGI (gunicorn sync workers)",
                        f"{base}/drf/{USER_UID}/{READ_KEY}",
                        headers=auth,
                        seconds=seconds,
                        workdir=workdir,
                    )
                )
            with _server(
                "hub-wsgi",
                [*wsgi, *no_log, "memoryhub.wsgi:application"],
                cwd=PROJECT,
                env=hub_env,
                log=workdir / "hub-wsgi.log",
            ) as hub:
                base = f"http://127.0.0.1:{hub.port}"
                _wait_until_up(base + entry_path, auth)
                say("hub: GET under WSGI")
                report.rows.append(
                    _measure(
                        "hub: GET one entry, under WSGI (gunicorn sync workers)",
                        base + entry_path,
                        headers=auth,
                        seconds=seconds,
                        workdir=workdir,
                    )
                )

        if honcho_url:
            say(f"Honcho at {honcho_url}")
            report.rows.append(
                _honcho_row(honcho_url.rstrip("/"), api_key=honcho_api_key, seconds=seconds, workdir=workdir)
            )
        else:
            report.rows.append(
                Row("Honcho: sessions list by metadata (one record)", note="skipped: HONCHO_URL not set")
            )
    report.load_after = _load()
    return report


def _owner_id(env: dict[str, str]) -> int:
    code = "from django.contrib.auth import get_user_model; print(get_user_model().objects.get(username='bench').pk)"
    return int(_manage(env, "shell", "--no-imports", "-c", code).strip().splitlines()[-1])


# --- the report ------------------------------------------------------------------------------------


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def targets(report: Report) -> list[tuple[str, float | None, str, float]]:
    """(what, measured ratio, comparison, target) for each of the issue's targets."""
    floor = report.measured("floor: DRF APIView, token auth, ModelSerializer")
    get = report.measured("hub: GET one entry")
    put = report.measured("hub: PUT one entry")
    honcho = report.row("Honcho: sessions list by metadata (one record)")
    rows = [
        (
            "hub GET req/s / DRF floor req/s (8 connections)",
            _ratio(get.requests_per_second, floor.requests_per_second),
            ">=",
            0.9,
        ),
        ("hub GET p50 / DRF floor p50 (1 connection)", _ratio(get.p50_ms, floor.p50_ms), "<=", 1.15),
        ("hub PUT req/s / hub GET req/s", _ratio(put.requests_per_second, get.requests_per_second), ">=", 0.7),
    ]
    for row in report.rows:
        if row.name.startswith(("hub: list page", "hub: ?q=")):
            rows.append(
                (
                    f"{row.name[5:]} req/s / hub GET req/s",
                    _ratio(row.requests_per_second, get.requests_per_second),
                    ">=",
                    0.6,
                )
            )
    if honcho and honcho.requests_per_second:
        rows.append(
            ("hub GET req/s / Honcho req/s", _ratio(get.requests_per_second, honcho.requests_per_second), ">=", 3.0)
        )
        rows.append(("hub GET p50 / Honcho p50", _ratio(get.p50_ms, honcho.p50_ms), "<=", 0.4))
    return rows


def _embedded(report: Report) -> str:
    if report.embeddings == "off":
        return " (embeddings off: searches by words alone)"
    return f" (embedded by the {report.embeddings} model: searches by words and meaning, as by default)"


def report_markdown(report: Report) -> str:
    floor = report.measured("floor: DRF APIView, token auth, ModelSerializer")
    lines = [
        f"Server: {report.server}, on 127.0.0.1; {report.database}"
        f"{f' ({report.prepared})' if report.prepared else ''}; {report.entries:,} entries for the user"
        f"{_embedded(report)}; "
        f"wrk, one thread, {report.seconds:g} s per run (after a 1 s warm-up); req/s is the best of "
        f"{BUSY_ROUNDS} runs, each opening its connections anew (one worker may take all of a run's). "
        "Load average before / after: "
        f"{report.load_before} / {report.load_after}.",
        "",
        "| what | req/s at 8 connections | x DRF floor | p50 at 1 connection | x DRF floor | errors |",
        "|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        if row.requests_per_second is None:
            lines.append(f"| {row.name} | - | - | - | - | {row.note} |")
            continue
        rate_ratio = _ratio(row.requests_per_second, floor.requests_per_second)
        p50_ratio = _ratio(row.p50_ms, floor.p50_ms)
        lines.append(
            f"| {row.name} | {row.requests_per_second:,.0f} | {rate_ratio:.2f}x | "
            f"{row.p50_ms:.2f} ms | {p50_ratio:.2f}x | {row.errors} |"
        )
    lines += ["", "| target | measured | target | holds |", "|---|---|---|---|"]
    for what, measured, comparison, target in targets(report):
        if measured is None:
            lines.append(f"| {what} | - | {comparison} {target:g} | not measured |")
            continue
        holds = measured >= target if comparison == ">=" else measured <= target
        lines.append(f"| {what} | {measured:.2f} | {comparison} {target:g} | {'yes' if holds else 'NO'} |")
    alone = words_only_ratios(report)
    if alone:
        shares = "; ".join(f"{what} {ratio:.2f}x" for what, ratio in alone)
        lines += [
            "",
            f"Beside the targets, the same searches by words alone (embeddings off), req/s / hub GET req/s: {shares}.",
        ]
    return "\n".join(lines) + "\n"


def words_only_ratios(report: Report) -> list[tuple[str, float]]:
    """(what, req/s / the hub GET's req/s) of each search measured with embeddings off."""
    get = report.measured("hub: GET one entry")
    found = []
    for row in report.rows:
        ratio = _ratio(row.requests_per_second, get.requests_per_second)
        if row.name.startswith(WORDS_ONLY) and ratio is not None:
            found.append((row.name.removeprefix(WORDS_ONLY).removeprefix("?q= "), ratio))
    return found


def write_report(report: Report, path: Path) -> None:
    """Write the table into path; in an existing file, only this benchmark's own section is replaced."""
    section = f"{SECTION_START}\n## HTTP side by side ({report.database})\n\n{report_markdown(report)}{SECTION_END}\n"
    text = path.read_text() if path.exists() else ""
    pattern = re.compile(re.escape(SECTION_START) + r".*?" + re.escape(SECTION_END) + r"\n?", re.S)
    marker = f"## HTTP side by side ({report.database})"
    existing = [match for match in pattern.finditer(text) if marker in match.group(0)]
    if existing:
        match = existing[0]
        text = text[: match.start()] + section + text[match.end() :]
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "") + section
    path.write_text(text)
