# local-rag — two commands do everything: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RAG := $(VENV)/bin/rag
STAMP := $(VENV)/.installed-default
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: demo test install install-local-qwen3 bench clean-db

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . \
	  || $(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

## make demo: embedded PostgreSQL + schema + sample vault + admin account + API on :8000
demo: $(STAMP)
	test -f .env || cp .env.sample .env
	$(RAG) pg start
	$(RAG) db init
	$(RAG) ingest samples/acme-vault
	$(RAG) ensure_admin
	$(RAG) serve --host $(HOST) --port $(PORT)

## make test: throw-away embedded cluster, the whole pytest suite, cluster removed
test: $(STAMP)
	$(PY) tests/run_with_cluster.py -- $(PYTEST_ARGS)
