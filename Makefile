# MemoryHub: `make run` to start a hub, `make test` to run the whole suite.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
# The secret key: the environment's if set, else one kept in data/secret_key (made on first run).
WITH_KEY = SECRET_KEY="$${SECRET_KEY:-$$(cat data/secret_key)}"

.PHONY: run test install install-dev migrate clean benchmark

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

data/secret_key:
	mkdir -p data
	umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@

migrate: $(VENV)/.installed data/secret_key
	$(WITH_KEY) $(PY) manage.py migrate --noinput -v0

run: migrate
	$(WITH_KEY) $(PY) manage.py collectstatic --noinput -v0
	$(WITH_KEY) $(PY) manage.py first_run
	$(WITH_KEY) $(PY) manage.py runserver --noreload $(HOST):$(PORT)

test: $(VENV)/.installed-dev
	SECRET_KEY=test-only-not-secret $(VENV)/bin/pytest

# The speed targets, measured on a fresh SQLite database in a temporary folder (a few minutes at
# the default size); writes docs/BENCHMARKS.md. `make benchmark ENTRIES=100000` for a quicker run.
ENTRIES ?= 1000000
USERS   ?= 10
benchmark: $(VENV)/.installed
	SECRET_KEY="$${SECRET_KEY:-benchmark-only-not-secret}" $(PY) manage.py benchmark --entries $(ENTRIES) --users $(USERS) --report docs/BENCHMARKS.md

clean:
	rm -rf $(VENV) staticfiles .pytest_cache
