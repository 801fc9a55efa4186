# The two commands the README promises: `make build` and `make test`. Both create the virtual
# environment from the pinned lock files when it is missing: `make build` the runtime
# (requirements.lock), `make test` also the test tools (requirements-dev.lock).
PYTHON ?= python3
# the interpreter of a CUDA machine, with its own GPU builds of the frameworks (see docs/gpu.md)
GPU_PYTHON ?= python3
JOBS ?=
VENV ?= .venv
PY := $(VENV)/bin/python
# requirements.lock pins torch's CPU build (+cpu), which only the PyTorch CPU index has
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
STAMP := $(VENV)/.installed-$(shell sha256sum requirements.lock | cut -c1-12)
DEV_STAMP := $(VENV)/.dev-installed-$(shell cat requirements.lock requirements-dev.lock | sha256sum | cut -c1-12)
# `make test BROWSER_DEPS=0`: do not try to install Chromium and Java (the browser tests then skip)
BROWSER_DEPS ?= 1
# `make test SANDBOX_DEPS=0`: do not try to install bubblewrap (cells then run unsandboxed, saying so; docs/sandbox.md)
SANDBOX_DEPS ?= 1
ROW ?=

.PHONY: preview cache-get mutate build test test-fast verify verify-gpu verify-env venv-env check docs bench enginebench serve golden lock clean venv venv-dev

venv: $(STAMP)

venv-dev: $(DEV_STAMP)

# torch first, from the PyTorch CPU index (one package: the index is asked about nothing else), then the
# rest of the lock, where torch is then already satisfied.
# The stamps are named by the lock files' hashes, so a changed lock makes a new stamp; no dependency on
# the files' times, which a fresh clone sets to now (it would reinstall into a venv already in place).
$(STAMP):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) $$(grep '^torch==' requirements.lock)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	rm -f $(VENV)/.installed-*
	touch $@

$(DEV_STAMP): | $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock -r requirements-dev.lock
	rm -f $(VENV)/.dev-installed-*
	touch $@

build: $(STAMP)
	$(PY) -m generator build

# Everything: the fast tests, the one build of the real content (verifying it; a render when .cache is
# warm), the browser tests and the real benchmark run. Chromium and Java are installed when missing
# and possible (.ci/browser-deps); otherwise the browser tests are skipped, saying how to run them.
test: $(DEV_STAMP)
	@if [ "$(BROWSER_DEPS)" = 1 ]; then .ci/browser-deps; fi
	@if [ "$(SANDBOX_DEPS)" = 1 ]; then .ci/sandbox-deps; fi
	$(PY) -m pytest

# The fast suite: no real content build, no browser, no benchmark run;
# spread over the cores with pytest-xdist (the content tests share one build per session: not here).
test-fast: $(DEV_STAMP)
	$(PY) -m pytest -m "not content and not browser" -n auto

check: $(STAMP)
	$(PY) -m generator check

# docs/schema.md's field tables, generated from generator/load/schema.py (tests/test_docs.py fails when stale)
docs: $(STAMP)
	$(PY) -m generator.load.schema

verify: $(STAMP)
	$(PY) -m generator verify $(if $(ROW),--only $(ROW))

# Mutation testing of the checks (docs/mutation.md): writes content/mutants/<sheet>.json (commit it);
# only cells that changed since their recorded run run again. MUTATE_ARGS passes more (--shard 1/4, --check).
MUTATE_ARGS ?=
mutate: $(STAMP)
	$(PY) -m generator mutate $(if $(ROW),--only $(ROW)) $(MUTATE_ARGS)

# No venv: the CPU lock's PyTorch is the wrong build on a GPU machine.
verify-gpu:
	$(GPU_PYTHON) -m generator verify --device cuda $(if $(JOBS),--jobs $(JOBS))

# Older releases (docs/versions.md): `make verify-env ENV=jax-0.9` builds .venvs/jax-0.9 from the lock
# with environments/jax-0.9.txt's overrides in place of the lines they name (torch first, from the same
# place as for .venv), then verifies that environment's lanes with its interpreter and writes
# content/versions/jax-0.9.json (commit it). ENV_ARGS passes more options (--jobs 2 --cache DIR).
ENV ?=
ENV_PYTHON ?= python3.11
ENV_ARGS ?=
ENV_VENV := .venvs/$(ENV)
ENV_STAMP := $(ENV_VENV)/.installed-$(shell cat requirements.lock environments/$(ENV).txt 2>/dev/null | sha256sum | cut -c1-12)

$(ENV_STAMP): | $(STAMP)
	@test -n "$(ENV)" -a -f environments/$(ENV).txt || { echo "ENV=<name>, one of: $$(ls environments | sed -n 's/\.txt$$//p' | tr '\n' ' ')" >&2; exit 2; }
	test -x $(ENV_VENV)/bin/python || $(ENV_PYTHON) -m venv $(ENV_VENV)
	$(ENV_VENV)/bin/python -m pip install -q --disable-pip-version-check --no-deps $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) $$(grep '^torch==' requirements.lock)
	$(PY) -m generator.verify.environments $(ENV) > $(ENV_VENV)/requirements.txt
	$(ENV_VENV)/bin/python -m pip install -q --disable-pip-version-check -r $(ENV_VENV)/requirements.txt
	rm -f $(ENV_VENV)/.installed-*
	touch $@

venv-env: $(ENV_STAMP)

verify-env: $(ENV_STAMP)
	$(ENV_VENV)/bin/python -m generator verify --environment $(ENV) $(ENV_ARGS)

# The framework benchmarks: a fresh run, published to content/benchmarks/<machine>.json only when it
# is complete (commit the file; `make build` renders it and never runs a benchmark). About a minute of
# 2 cores on a quiet machine; BENCH_BUDGET bounds the wall time on a busy one (a run that does not
# fit is not published).
BENCH_BUDGET ?= 1800
bench: $(STAMP)
	$(PY) -m generator.bench --force --budget $(BENCH_BUDGET) --publish content/benchmarks

# The verification engine's own benchmark: cold verification, no-change and one-row builds, scaling.
enginebench: $(STAMP)
	$(PY) -m generator.bench.engine

# serve into .cache/serve/ (never site/), rebuild on change, show errors in the page; ROW=<row-id>: that row's sheets only
serve: $(STAMP)
	$(PY) -m generator serve $(if $(ROW),--only $(ROW))

# CI's results, published with the site (results-cache.json.gz): only those whose keys are this checkout's
# are stored (same cell, lane, worker, Python and package versions). CACHE_URL=<file or URL> names another.
CACHE_URL ?=
cache-get: $(STAMP)
	$(PY) -m generator cache import $(CACHE_URL)

# A first look at one row: verify it (the other cells come from the cache) and render only its sheet into
# .cache/preview/ (site/ is left alone); the cache of CI's results (make cache-get) makes the rest a render.
preview: $(STAMP)
	@test -n "$(ROW)" || { echo "make preview ROW=<row-id>" >&2; exit 2; }
	$(PY) -m generator build --only $(ROW) --preview --keep-going --out .cache/preview
	@echo "open .cache/preview/index.html"

golden: $(STAMP)
	$(PY) -m tests.golden

# Re-resolve the pins from pyproject.toml (needs the package indexes): the runtime into
# requirements.lock, then the dev tools, whose extra packages go to requirements-dev.lock.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	$(PYTHON) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"])); open(".venv-lock/dev.txt", "w").write("\n".join(p["optional-dependencies"]["dev"]))' > .venv-lock/runtime.txt
	.venv-lock/bin/pip install -q $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -r .venv-lock/runtime.txt
	.venv-lock/bin/pip freeze --exclude-editable | LC_ALL=C sort > .venv-lock/runtime.lock
	.venv-lock/bin/pip install -q -r .venv-lock/dev.txt
	.venv-lock/bin/pip freeze --exclude-editable | LC_ALL=C sort > .venv-lock/all.lock
	{ sed -n '/^#/p' requirements.lock; cat .venv-lock/runtime.lock; } > requirements.lock.new
	{ sed -n '/^#/p' requirements-dev.lock; comm -13 .venv-lock/runtime.lock .venv-lock/all.lock; } > requirements-dev.lock.new
	mv requirements.lock.new requirements.lock && mv requirements-dev.lock.new requirements-dev.lock
	rm -rf .venv-lock

clean:
	rm -rf site .cache
