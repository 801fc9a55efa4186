# The two commands the README promises: `make build` and `make test`. Both create the virtual
# environment from the pinned lock file when it is missing.
PYTHON ?= python3
# the interpreter of a CUDA machine, with its own GPU builds of the frameworks (see docs/gpu.md)
GPU_PYTHON ?= python3
JOBS ?=
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha256sum requirements.lock | cut -c1-12)
ROW ?=

.PHONY: build test verify verify-gpu check bench serve golden lock clean venv

venv: $(STAMP)

$(STAMP): requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	rm -f $(VENV)/.installed-*
	touch $@

build: $(STAMP)
	$(PY) -m generator build

test: $(STAMP)
	$(PY) -m pytest

check: $(STAMP)
	$(PY) -m generator check

verify: $(STAMP)
	$(PY) -m generator verify $(if $(ROW),--only $(ROW))

# No venv: the CPU lock's PyTorch is the wrong build on a GPU machine.
verify-gpu:
	$(GPU_PYTHON) -m generator verify --device cuda $(if $(JOBS),--jobs $(JOBS))

bench: $(STAMP)
	$(PY) -m generator.enginebench

serve: $(STAMP)
	$(PY) -m generator serve

golden: $(STAMP)
	$(PY) -m tests.golden

# Re-resolve the pins from requirements.in (needs the package index).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q -r requirements.in
	.venv-lock/bin/pip freeze --exclude-editable | sort -f > requirements.lock
	rm -rf .venv-lock

clean:
	rm -rf site .cache
