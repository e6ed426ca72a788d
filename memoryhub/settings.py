"""MemoryHub settings, read from the environment.

Every variable is listed in the README. A bad value raises ImproperlyConfigured at start-up,
never later. Nothing here makes a network call.
"""

import hashlib
import logging
import os
import re
import zoneinfo
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

VERSION = "0.1.0"


def envbool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0, true/false, yes/no, on/off; got {raw!r}")


def envint(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number; got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}; got {value}")
    return value


def envfloat(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number; got {raw!r}") from None
    if value <= 0:
        raise ImproperlyConfigured(f"{name} must be greater than 0; got {value}")
    return value


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = envbool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and the data folder holds no secret_key: run `make run` once, with the same "
            "MEMORYHUB_DATA_DIR (it makes the folder's secret_key), or export SECRET_KEY=... (DEBUG=1 gives a "
            "development-only key)."
        )
    SECRET_KEY = "insecure-development-key-only-for-debug"

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "memories",
    "evaluation",
]

MIDDLEWARE = [
    "memoryhub.middleware.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "memoryhub.middleware.RequestSanityMiddleware",
    "memoryhub.middleware.RequestBodyLimitMiddleware",
    "memoryhub.middleware.StaticFilesMiddleware",
    "memoryhub.middleware.SecurityHeadersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "memoryhub.middleware.LoginThrottleMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite under ./data by default; DATABASE_URL switches (postgres://... for PostgreSQL).
DATA_DIR = Path(os.environ.get("MEMORYHUB_DATA_DIR", BASE_DIR / "data"))
DATABASE_URL = os.environ.get("DATABASE_URL", "")
# Django's SQLite backend, with writers queued by the operating system rather than by SQLite's busy handler
# (memoryhub/sqlite/base.py says why).
SQLITE_ENGINE = "memoryhub.sqlite"
# Django's PostgreSQL backend, with batches that fit the protocol when the server binds parameters
# (memoryhub/postgresql/base.py).
POSTGRESQL_ENGINE = "memoryhub.postgresql"
SQLITE_OPTIONS = {
    # WAL lets readers run beside the writer; IMMEDIATE takes the write lock at BEGIN, so two
    # writers queue on the busy timeout instead of failing with "database is locked" mid-transaction.
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
    "transaction_mode": "IMMEDIATE",
    "timeout": envint("SQLITE_BUSY_TIMEOUT", 20, minimum=1),
}
# Seconds a worker keeps its database connection between requests. Reopening SQLite per request
# costs the open, the PRAGMAs and, when it was the last connection, a WAL checkpoint (it halved GET
# throughput over HTTP); reopening PostgreSQL costs a TCP and authentication handshake.
DB_CONN_MAX_AGE = envint("DB_CONN_MAX_AGE", 60)
# PostgreSQL: send parameters apart from statements, and prepare those run often (off: for a connection pooler
# in transaction mode that does not keep prepared statements, such as PgBouncer before 1.21).
DB_SERVER_SIDE_BINDING = envbool("DB_SERVER_SIDE_BINDING", True)
# How many times a connection runs a statement before it is prepared (psycopg's own default).
PREPARE_THRESHOLD = 5
if DATABASE_URL:
    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=DB_CONN_MAX_AGE)}
    except ValueError as error:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {error}") from None
    if DATABASES["default"]["ENGINE"] not in ("django.db.backends.sqlite3", "django.db.backends.postgresql"):
        raise ImproperlyConfigured(
            f"DATABASE_URL must name a SQLite or PostgreSQL database (sqlite:///PATH or postgres://...); "
            f"got the scheme {DATABASE_URL.partition(':')[0]!r}."
        )
    if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        # The same engine and connection handling as the default SQLite database below.
        DATABASES["default"]["ENGINE"] = SQLITE_ENGINE
        DATABASES["default"]["OPTIONS"] = dict(SQLITE_OPTIONS)
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's, with batches that fit PostgreSQL's protocol when the server binds parameters (below).
        DATABASES["default"]["ENGINE"] = POSTGRESQL_ENGINE
        # Pages read datetimes as text in ISO 8601 (memories/rows.py); a server or database whose DateStyle
        # writes them otherwise (SQL, Postgres, German) would show them as null. Set when the connection
        # starts (no round trip), after any options DATABASE_URL gives.
        options = DATABASES["default"].setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} -c datestyle=ISO".strip()
        # Parameters sent apart from the statement (psycopg's server-side binding) rather than quoted into its
        # text in Python, and a statement run PREPARE_THRESHOLD times on a connection prepared, so the server
        # parses and plans it once (Django turns preparing off unless asked): a search's statements are long,
        # with many parameters, and their planning was a third of a PostgreSQL search's time.
        if DB_SERVER_SIDE_BINDING:
            options.setdefault("server_side_binding", True)
            options.setdefault("prepare_threshold", PREPARE_THRESHOLD)
    # Off by default: a health check is a round trip to PostgreSQL at the start of every request
    # that reuses its connection. Without it a connection the server dropped (a restart) fails
    # the one request that meets it, and Django then closes it; set DB_CONN_HEALTH_CHECKS=1 to
    # pay the round trip instead.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = envbool("DB_CONN_HEALTH_CHECKS", False)
else:
    DATABASES = {
        "default": {
            "ENGINE": SQLITE_ENGINE,
            "NAME": str(DATA_DIR / "memoryhub.sqlite3"),
            "OPTIONS": dict(SQLITE_OPTIONS),
            "CONN_MAX_AGE": DB_CONN_MAX_AGE,
        }
    }
# No ATOMIC_REQUESTS: a read runs in autocommit, with no BEGIN and COMMIT around it; every write
# opens its own transaction in memories.services.

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (ValueError, zoneinfo.ZoneInfoNotFoundError):
    raise ImproperlyConfigured(
        f"TIME_ZONE must name a time zone, such as UTC or Europe/Lisbon; got {TIME_ZONE!r}."
    ) from None
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the apps' static folders when collectstatic has not run (tests, first start).
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "dashboard:login"

# Limits: every one can be set from the environment, and a 400 names the one that was hit.
MEMORYHUB_MAX_VALUE_BYTES = envint("MEMORYHUB_MAX_VALUE_BYTES", 64 * 1024, minimum=1)
MEMORYHUB_MAX_META_BYTES = envint("MEMORYHUB_MAX_META_BYTES", 16 * 1024, minimum=2)
MEMORYHUB_PAGE_SIZE = envint("MEMORYHUB_PAGE_SIZE", 50, minimum=1)
MEMORYHUB_MAX_PAGE_SIZE = envint("MEMORYHUB_MAX_PAGE_SIZE", 500, minimum=1)
if MEMORYHUB_PAGE_SIZE > MEMORYHUB_MAX_PAGE_SIZE:
    raise ImproperlyConfigured(
        f"MEMORYHUB_PAGE_SIZE must be at most MEMORYHUB_MAX_PAGE_SIZE ({MEMORYHUB_MAX_PAGE_SIZE}); "
        f"got {MEMORYHUB_PAGE_SIZE}"
    )
MEMORYHUB_QUERY_LIMIT = envint("MEMORYHUB_QUERY_LIMIT", 10, minimum=1)
# The write guard (memories.guard): every write's key and value are scanned for prompt injection and
# hidden characters, and each account's policy says what follows (allow, flag, hold). Off: no scan at all.
MEMORYHUB_WRITE_GUARD = envbool("MEMORYHUB_WRITE_GUARD", True)
# Request bodies above this are refused with 413 before they are read (memoryhub.middleware).
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("MEMORYHUB_MAX_BODY_BYTES", 2 * 1024 * 1024, minimum=1024)
# Requests each API token may make, as DRF writes rates ("1200/minute", "50/second"); empty: no limit.
MEMORYHUB_RATE_LIMIT = os.environ.get("MEMORYHUB_RATE_LIMIT", "1200/minute").strip()
if MEMORYHUB_RATE_LIMIT and not re.fullmatch(
    r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", MEMORYHUB_RATE_LIMIT
):
    raise ImproperlyConfigured(
        "MEMORYHUB_RATE_LIMIT must look like 1200/minute (per second, minute, hour or day); "
        f"got {MEMORYHUB_RATE_LIMIT!r}"
    )
# The rate limit's counters: by default a table in shared memory that every worker process of
# this machine maps (memoryhub.ratelimit), so the limit holds on one machine with no file or
# database write per request. MEMORYHUB_CACHE_URL (redis://...) moves them, and Django's cache,
# to a Redis that every app server shares: the limit then holds across all of them.
MEMORYHUB_CACHE_URL = os.environ.get("MEMORYHUB_CACHE_URL", "").strip()
if MEMORYHUB_CACHE_URL and not MEMORYHUB_CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(
        f"MEMORYHUB_CACHE_URL must be a Redis URL (redis://, rediss:// or unix://); got {MEMORYHUB_CACHE_URL!r}"
    )
# Seconds before a Redis call is given up (the request then goes uncounted, never refused).
REDIS_TIMEOUT = envfloat("MEMORYHUB_CACHE_TIMEOUT", 1.0)
if MEMORYHUB_CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": MEMORYHUB_CACHE_URL,
            "OPTIONS": {"socket_connect_timeout": REDIS_TIMEOUT, "socket_timeout": REDIS_TIMEOUT},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# The shared table's file: in /dev/shm (memory, never written to disk) where the system has it,
# one per data folder and database, so two hubs on one machine keep their own counters.
_SHARED_MEMORY_DIR = Path("/dev/shm")
_SHARED_DIR = _SHARED_MEMORY_DIR if _SHARED_MEMORY_DIR.is_dir() and os.access(_SHARED_MEMORY_DIR, os.W_OK) else DATA_DIR
_SHARED_SUFFIX = hashlib.sha256(f"{DATA_DIR.resolve()}|{DATABASE_URL}".encode()).hexdigest()[:16]
MEMORYHUB_RATE_LIMIT_TABLE = _SHARED_DIR / f"memoryhub-ratelimit-{_SHARED_SUFFIX}"
# The API tokens' generation counter (memoryhub.authentication), beside it: every change to a token
# or an account bumps it, and every worker of this hub forgets the tokens it held.
MEMORYHUB_TOKEN_GENERATION_FILE = _SHARED_DIR / f"memoryhub-tokens-{_SHARED_SUFFIX}"

# Panels other apps add to the dashboard's overview: dotted paths of callables (request, owner) ->
# None or {"template": ..., values} (see memories.views._overview_panels). Append new panels below.
MEMORYHUB_OVERVIEW_PANELS = [
    "evaluation.panels.latest_evaluation_panel",
    "memories.panels.sync_status_panel",
    "memories.panels.work_panel",
]

# The memory_backend tool's actions (POST /api/v1/tool), in the order its schema lists them: each
# name with the dotted path of its handler (account, uid, arguments) -> reply (see memories.tool).
MEMORYHUB_TOOL_ACTIONS = {
    "store": "memories.tool.action_store",
    "get": "memories.tool.action_get",
    "query": "memories.tool.action_query",
    "list": "memories.tool.action_list",
    "delete": "memories.tool.action_delete",
    "info": "memories.tool.action_info",
    "evaluate": "evaluation.tool.action_evaluate",
}

# Kinds of background work `manage.py work` does: dotted paths of memories.work.JobKind objects (the
# same registry shape as the panels: memories never imports the apps that add kinds). Append new kinds below.
MEMORYHUB_JOB_KINDS = [
    "memories.jobs.sync_job",
    "memories.jobs.embedding_job",
    "evaluation.jobs.evaluation_job",
    "memories.jobs.expiry_job",
]

MEMORYHUB_BACKEND = os.environ.get("MEMORYHUB_BACKEND", "auto").strip().lower()
if MEMORYHUB_BACKEND not in ("auto", "local", "honcho", "null"):
    raise ImproperlyConfigured(f"MEMORYHUB_BACKEND must be one of auto, local, honcho, null; got {MEMORYHUB_BACKEND!r}")

# Honcho (optional): the cloud when only HONCHO_API_KEY is set, a self-hosted server at HONCHO_URL.
# Nothing talks to it unless one of the two is set.
HONCHO_URL = os.environ.get("HONCHO_URL", "").strip().rstrip("/")
if HONCHO_URL and not HONCHO_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"HONCHO_URL must start with http:// or https://; got {HONCHO_URL!r}")
HONCHO_API_KEY = os.environ.get("HONCHO_API_KEY", "").strip()
HONCHO_WORKSPACE_ID = os.environ.get("HONCHO_WORKSPACE_ID", "").strip() or "memoryhub"
HONCHO_TIMEOUT = envfloat("HONCHO_TIMEOUT", 5.0)

# Sync (optional, off by default): every change mirrored to Honcho through an outbox drained by
# `manage.py honcho_sync`. On without Honcho configured is a mistake caught here, not at the first write.
MEMORYHUB_HONCHO_SYNC = envbool("MEMORYHUB_HONCHO_SYNC", False)
if MEMORYHUB_HONCHO_SYNC and not (HONCHO_URL or HONCHO_API_KEY):
    raise ImproperlyConfigured(
        "MEMORYHUB_HONCHO_SYNC=on needs Honcho configured: set HONCHO_URL (self-hosted) or HONCHO_API_KEY (cloud)"
    )
MEMORYHUB_SYNC_MAX_ATTEMPTS = envint("MEMORYHUB_SYNC_MAX_ATTEMPTS", 20, minimum=1)
MEMORYHUB_SYNC_POLL_SECONDS = envfloat("MEMORYHUB_SYNC_POLL_SECONDS", 5.0)

# Semantic recall (memories/embeddings): off, local (a model in the hub's own processes, nothing leaves
# the machine) or openai (any OpenAI-compatible /v1/embeddings endpoint: entries and queries go there).
MEMORYHUB_EMBEDDINGS = os.environ.get("MEMORYHUB_EMBEDDINGS", "local").strip().lower()
if MEMORYHUB_EMBEDDINGS not in ("off", "local", "openai"):
    raise ImproperlyConfigured(f"MEMORYHUB_EMBEDDINGS must be one of off, local, openai; got {MEMORYHUB_EMBEDDINGS!r}")
MEMORYHUB_EMBEDDINGS_URL = os.environ.get("MEMORYHUB_EMBEDDINGS_URL", "").strip().rstrip("/")
MEMORYHUB_EMBEDDINGS_KEY = os.environ.get("MEMORYHUB_EMBEDDINGS_KEY", "").strip()
MEMORYHUB_EMBEDDINGS_MODEL = os.environ.get("MEMORYHUB_EMBEDDINGS_MODEL", "").strip()
# Seconds an endpoint may take: the worker's batches wait this long, a search's query much less.
MEMORYHUB_EMBEDDINGS_TIMEOUT = envfloat("MEMORYHUB_EMBEDDINGS_TIMEOUT", 10.0)
MEMORYHUB_EMBEDDINGS_QUERY_TIMEOUT = envfloat("MEMORYHUB_EMBEDDINGS_QUERY_TIMEOUT", 0.5)
if MEMORYHUB_EMBEDDINGS == "openai":
    if not MEMORYHUB_EMBEDDINGS_URL.startswith(("http://", "https://")):
        raise ImproperlyConfigured(
            "MEMORYHUB_EMBEDDINGS=openai needs MEMORYHUB_EMBEDDINGS_URL, the endpoint's base URL starting with "
            f"http:// or https:// (e.g. http://127.0.0.1:11434/v1); got {MEMORYHUB_EMBEDDINGS_URL!r}"
        )
    if not MEMORYHUB_EMBEDDINGS_MODEL:
        raise ImproperlyConfigured(
            "MEMORYHUB_EMBEDDINGS=openai needs MEMORYHUB_EMBEDDINGS_MODEL, the endpoint's model name"
        )

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "memoryhub.authentication.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["memoryhub.api.HubJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "memoryhub.api.MemoryPagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "memoryhub.api.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["memoryhub.api.TokenRateThrottle"],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    "DESCRIPTION": "Cross-session memory for AI agents: store, recall, query and audit what agents remember.",
    "VERSION": VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # The docs page's scripts come from the installed sidecar package, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One name for the privacy classes, wherever they appear (entries, writes, history, the tool).
    "ENUM_NAME_OVERRIDES": {"PrivacyEnum": "memories.models.Privacy"},
    # Every operation lists the error answers it can give (400, 401, 403, 404, 413, 415, 429).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memories.api.schema.document_error_responses",
        "memories.api.schema.document_search_only_fields",
    ],
}

# HTTPS, for a hub reached over the network (docs/RELIABILITY.md). With these set as there,
# `manage.py check --deploy` is clean. Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=1
# (the proxy must then set X-Forwarded-Proto itself).
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", SECURE_SSL_REDIRECT)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", SECURE_SSL_REDIRECT)
if envbool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Every name Python's logging takes (WARN and FATAL too), any case.
LOG_LEVELS = tuple(logging.getLevelNamesMapping())
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").strip().upper()
if LOG_LEVEL not in LOG_LEVELS:
    raise ImproperlyConfigured(f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}; got {os.environ['LOG_LEVEL']!r}.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "without_query_strings": {"()": "memoryhub.logs.WithoutQueryStrings"},
        "without_traceback": {"()": "memoryhub.logs.WithoutTraceback"},
    },
    "formatters": {
        "django.server": {"()": "django.utils.log.ServerFormatter", "format": "[{server_time}] {message}", "style": "{"}
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        "django.server": {"class": "logging.StreamHandler", "formatter": "django.server"},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # httpx (under the Honcho SDK) and httpx2 (under the MCP SDK) log every request at INFO; only
        # their problems are worth a line.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        # The MCP SDK's Streamable HTTP transport says "Terminating session: None" at INFO after every
        # request the stateless /mcp answers: a line per call that tells an operator nothing.
        "mcp.server.streamable_http": {"level": "WARNING"},
        # A request naming a host the hub does not serve (a scanner asking by IP address, a proxy not
        # passing the Host on): one line naming the host, not a traceback of Django's own frames.
        "django.security.DisallowedHost": {
            "handlers": ["console"],
            "filters": ["without_traceback"],
            "propagate": False,
        },
        # The development server's access log (`make run`), without query strings.
        "django.server": {
            "handlers": ["django.server"],
            "filters": ["without_query_strings"],
            "level": "INFO",
            "propagate": False,
        },
    },
}
