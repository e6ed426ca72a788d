# MemoryHub: `make run` to start a hub, `make test` to run the whole suite.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
# The secret key: the environment's if set, else one kept in the data folder's secret_key (made on first
# run): data/secret_key, or $MEMORYHUB_DATA_DIR/secret_key, where `./hub` and manage.py look for it.
KEY_FILE := $(or $(MEMORYHUB_DATA_DIR),data)/secret_key
WITH_KEY = SECRET_KEY="$${SECRET_KEY:-$$(cat $(KEY_FILE))}"

# `make serve`: gunicorn with WORKERS uvicorn worker processes over memoryhub.asgi (the rest of
# its settings, the access log's among them, in memoryhub/gunicorn.conf.py).
WORKERS ?= 4
TIMEOUT ?= 30

.PHONY: run serve lint test test-fast install install-dev migrate clean screenshots benchmark benchmark-http

# After the packages, the stdio MCP server's answers to a client's first messages are kept ahead
# (memories/mcp/stdio.py), so its first start answers at once; `migrate` (make run, make serve)
# keeps them again after an upgrade, and does nothing while they are up to date.
$(VENV)/.installed: requirements.txt | $(KEY_FILE)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing the hub's packages into $(VENV) (requirements.txt: a few minutes the first time)"
	@$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	@$(WITH_KEY) $(PY) manage.py mcp --keep-answers
	@touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	@echo "installing the test and lint tools into $(VENV) (requirements-dev.txt)"
	@$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	@touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

$(KEY_FILE):
	@mkdir -p $(dir $@)
	@umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@

migrate: $(VENV)/.installed | $(KEY_FILE)
	@$(WITH_KEY) $(PY) manage.py migrate --noinput -v0
	@$(WITH_KEY) $(PY) manage.py mcp --keep-answers

run: migrate
	@$(PY) -m memoryhub.preflight $(HOST) $(PORT)
	@$(WITH_KEY) $(PY) manage.py collectstatic --noinput -v0
	@$(WITH_KEY) $(PY) manage.py first_run --url http://$(HOST):$(PORT)
	@# the worker (sync, evaluation runs, ...) beside the server; Ctrl-C stops both
	@$(WITH_KEY) $(PY) manage.py work --loop & worker=$$!; \
		$(WITH_KEY) $(PY) manage.py runserver --noreload $(HOST):$(PORT) & server=$$!; \
		trap 'kill -TERM $$worker $$server 2>/dev/null; wait' EXIT INT TERM; \
		wait $$server

# The dashboard's browser tests drive Debian's Chromium (never a browser that Playwright downloads).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# Production: see docs/RELIABILITY.md for the environment (SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL, SECURE_*).
serve: migrate
	@$(PY) -m memoryhub.preflight $(HOST) $(PORT)
	$(WITH_KEY) $(PY) manage.py collectstatic --noinput -v0
	$(WITH_KEY) $(PY) manage.py first_run --url http://$(HOST):$(PORT)
	$(WITH_KEY) exec $(VENV)/bin/gunicorn -c memoryhub/gunicorn.conf.py --bind $(HOST):$(PORT) \
		--workers $(WORKERS) --timeout $(TIMEOUT)

# The rules the code keeps: lint, format and types (config in pyproject.toml).
lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	SECRET_KEY=lint-only-not-secret $(VENV)/bin/mypy
# (the client is read from this checkout, whichever copy the environment has installed)
	PYTHONPATH=clients/python/src $(VENV)/bin/lint-imports

# --create-db: the test database is migrated from empty (the quick loop starts from a copy of one
# migrated earlier with the same migrations: tests/support/database.py).
test: lint $(VENV)/.installed-dev $(CHROMIUM)
	SECRET_KEY=test-only-not-secret $(VENV)/bin/pytest --create-db

# The quick loop while working: the suite without its slow, browser and process tests (see pytest.ini).
# The loop while working: no slow, browser or process tests, property tests at the fast profile's
# 10 examples (tests/support/examples.py), spread over FAST_WORKERS processes (pytest-xdist, each with
# a test database of its own); `make test` runs them all, at their full counts, in one process.
# Bytecode is cached (__pycache__, ignored by git) even where the environment turns it off: every
# worker imports the whole project and its test modules, and compiling them again each run costs
# each worker about 9 s of CPU.
FAST_WORKERS ?= 2
test-fast: $(VENV)/.installed-dev
	PYTHONDONTWRITEBYTECODE= SECRET_KEY=test-only-not-secret $(VENV)/bin/pytest \
		-m "not slow and not browser and not process" --hypothesis-profile=fast -n $(FAST_WORKERS)

# Photograph the dashboard's main pages (desktop and phone width) into docs/screenshots/.
screenshots: $(VENV)/.installed-dev $(CHROMIUM)
	MEMORYHUB_SCREENSHOTS_DIR=docs/screenshots SECRET_KEY=test-only-not-secret \
		$(VENV)/bin/pytest tests/browser/test_screenshots.py

# The speed targets, measured on a fresh SQLite database in a temporary folder (a few minutes at
# the default size); the report goes to a file under the system's temporary folder unless REPORT
# names one (REPORT=docs/BENCHMARKS.md refreshes the committed one). `make benchmark ENTRIES=100000`
# for a quicker run.
ENTRIES ?= 1000000
USERS   ?= 10
TMPDIR  ?= /tmp
benchmark: $(VENV)/.installed
	SECRET_KEY="$${SECRET_KEY:-benchmark-only-not-secret}" $(PY) manage.py benchmark --entries $(ENTRIES) --users $(USERS) \
		--report $(or $(REPORT),$(TMPDIR)/memoryhub-benchmark.md)

clean:
	rm -rf $(VENV) staticfiles .pytest_cache

# The hub over HTTP beside a plain Django and DRF floor (and HONCHO_URL when it answers), wrk as the
# client, a throwaway database (DATABASE_URL for PostgreSQL); the table goes to a file under the
# system's temporary folder unless REPORT names one (REPORT=docs/BENCHMARKS.md refreshes its section).
HTTP_ENTRIES ?= 20000
HTTP_WORKERS ?= 2
HTTP_SECONDS ?= 10
benchmark-http: $(VENV)/.installed
	SECRET_KEY="$${SECRET_KEY:-benchmark-only-not-secret}" $(PY) manage.py benchmark_http --entries $(HTTP_ENTRIES) \
		--workers $(HTTP_WORKERS) --seconds $(HTTP_SECONDS) $(if $(REPORT),--report $(REPORT))
