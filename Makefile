# xlaport: two commands on a fresh machine.
#   make book   create .venv, install, execute every notebook once, build the site into _build/html
#   make test   create .venv, install, run the whole suite (lint, unit tests, each notebook once, strict site build)
# A second run reuses .venv: the install is keyed on a hash of requirements.lock and pyproject.toml.
# requirements.lock pins every package of .venv with its hashes (CPython 3.11 on x86-64 Linux); `make lock`
# regenerates it from requirements.txt (the top-level pins) and requirements-tpu.lock from requirements-tpu.txt.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
# The emulator's Python: python3.11 first (requirements.lock is made for CPython 3.11), else the first 3.11+ on PATH.
# The real targets have their own environments and Pythons: TorchTPU 0.2.0 3.11-3.14, TorchNeuron 3.12-3.14.
SYSPY  ?= $(shell for p in python3.11 python3.12 python3.13 python3; do \
            command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo $$p; break; }; done)
REQHASH := $(shell cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)
STAMP  := $(VENV)/.installed-$(REQHASH)
PORT   ?= 8000
PYTEST_ARGS ?=
# Every Python that make starts writes the bytecode of what it imports (__pycache__ in .venv, src and tests; pytest
# keeps its rewritten test modules there too). Where PYTHONDONTWRITEBYTECODE is set, as on our CI machines, nothing
# is kept, and every interpreter compiled torch and torch_xla from source again: 'import torch' plus a target took
# 15 s instead of 6, in every chapter and every test subprocess.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help venv lock lint format test test-params soak unit notebooks editions-run site book browser verify serve clean

help:
	@echo "make book    execute the notebooks once and build the site into _build/html"
	@echo "make test    run the whole suite: unit tests, every notebook once, strict site build"
	@echo "make browser every page of the built site in the system Chromium, phone screenshots in _build/screenshots"
	@echo "make verify  on a TPU VM / Trainium / CUDA machine: every chapter via nbmake, a run record in verified/"
	@echo "make unit    unit tests only, without the slower fresh-interpreter ones (fast)"
	@echo "make lint    ruff (lint + format check) and mypy"
	@echo "make lock   regenerate requirements.lock and requirements-tpu.lock (every package pinned, with hashes)"
	@echo "make test-params  every chapter with each other seed and target its parameters cell offers (~25 min)"
	@echo "make soak    every chapter twice side by side, then make test beside two busy loops (~30 min)"
	@echo "make editions-run  each chapter's Colab/Jupyter edition run top to bottom in a fresh kernel (after make book)"
	@echo "make format  apply ruff's fixes and formatting"
	@echo "make serve   serve _build/html on http://localhost:$(PORT)"
	@echo "make clean   remove _build (keeps .venv)"

$(STAMP): requirements.lock pyproject.toml
	@if [ -z "$(SYSPY)" ]; then echo "error: Python 3.11 is needed on PATH (the emulator's requirements.lock is made for CPython 3.11)" >&2; exit 1; fi
	@test -x $(PY) || { v=$$($(SYSPY) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); 	  echo "creating $(VENV) with $(SYSPY) (Python $$v) for the emulator: torch 2.9.0 + torch_xla 2.9.0, locked for CPython 3.11"; 	  [ "$$v" = 3.11 ] || echo "note: Python $$v is not the 3.11 the lock is made for; if the install fails, put python3.11 on PATH"; 	  echo "(a TPU VM uses its own Python 3.11-3.14 environment from requirements-tpu.txt; TorchNeuron on Trainium needs Python 3.12-3.14: book/running.md)"; 	  $(SYSPY) -m venv $(VENV); }
	@echo "installing requirements.lock (torch 2.9.0 + torch_xla 2.9.0 + the book toolchain, every package pinned and hashed; several GB on first run)"
	@# uv (pinned and hashed in the lock, installed first by pip) fetches and unpacks in parallel: about 2 min instead
	@# of pip's 5 on 2 cores. Where uv cannot reach the package index, pip installs the same lock.
	awk '/^uv==/{f=1} f{print} f && !/\\$$/{exit}' requirements.lock > $(VENV)/uv-requirement.txt
	$(PY) -m pip install --quiet --progress-bar off --require-hashes --no-deps -r $(VENV)/uv-requirement.txt
	@# No --compile-bytecode: compiling all 18,000 modules took about 40 s; Python compiles the ones it imports, once
	@# (see PYTHONDONTWRITEBYTECODE above).
	$(BIN)/uv pip install --python $(PY) --require-hashes -r requirements.lock \
	  || $(PY) -m pip install --progress-bar off --require-hashes -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-*
	@touch $@

venv: $(STAMP)

# Regenerate the lock files from the top-level pins (needs the package index; commit the result).
LOCK_FLAGS := --generate-hashes --python-version 3.11.5 --quiet --custom-compile-command "make lock"
lock: $(STAMP)
	$(BIN)/uv pip compile requirements.txt $(LOCK_FLAGS) --python-platform x86_64-manylinux_2_28 -o requirements.lock
	@# torch_tpu 0.2.0 ships manylinux_2_31 wheels only (TPU VM images have glibc 2.35).
	$(BIN)/uv pip compile requirements-tpu.txt $(LOCK_FLAGS) --python-platform x86_64-manylinux_2_31 -o requirements-tpu.lock

LINT_PATHS := src tests scripts _ext

LINT_CMD = $(BIN)/ruff check $(LINT_PATHS) && $(BIN)/ruff format --check $(LINT_PATHS) && $(BIN)/mypy
lint: $(STAMP)
	$(LINT_CMD)

format: $(STAMP)
	$(BIN)/ruff check --fix $(LINT_PATHS)
	$(BIN)/ruff format $(LINT_PATHS)

# tests/unit only (no chapter runs, no site, no browser), without the fresh-interpreter tests.
unit: $(STAMP)
	$(PY) -m pytest tests/unit -m "not subprocess" $(PYTEST_ARGS)

# The chapters, executed once each into _build/executed, on JOBS pytest-xdist workers (default the machine's cores, at
# most 4), longest budget first, each timed in wall time against its budget: a chapter runs mostly on one core (its
# CPU time is 1.0-1.4x its wall time), so two side by side on two cores each keep about one. Beside them, at the
# lowest CPU priority (nice 19, in a session of their own: scripts/lowest_priority.sh says why), lint and the unit
# and site tests (JOBS workers; each module's tests on one worker, so its fixtures are set up once): they run on the
# CPU the chapters leave idle and yield it when a chapter wants it. After the chapters, the strict site build from the
# executed copies, then what reads the build (marker `built`: every page in a real browser, the reader editions of
# this run's chapters) on every core; then lint and the unit tests go back to normal priority to finish (where the
# user may raise a priority: root, as in CI), so that other work on a busy machine does not starve them. Their log
# comes last (and stays in _build/test-units.log). JOBS=1: one pytest process at a time, nothing beside another.
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
XDIST = $(if $(filter-out 0 1,$(JOBS)),-n $(JOBS) --dist loadgroup,)

# --durations: the slowest tests of each phase in the log, where a slow CI run shows where its time went.
DURATIONS ?= --durations=15 --durations-min=2

UNITS_CMD = $(PY) -m pytest $(XDIST) -m "not built and not notebook" $(DURATIONS) $(PYTEST_ARGS)
BUILT_CMD = XLAPORT_SITE_DIR=$(CURDIR)/_build/html $(PY) -m pytest $(XDIST) -m built -q -p no:cacheprovider $(DURATIONS) $(PYTEST_ARGS)
.PHONY: test-units
test-units: $(STAMP)
	$(UNITS_CMD)

test: $(STAMP)
	@mkdir -p _build && rm -f _build/test-units.rc _build/test-units.sid
ifeq ($(filter-out 0 1,$(JOBS)),)
	$(LINT_CMD)
	$(UNITS_CMD)
	$(PY) -m pytest -m notebook $(PYTEST_ARGS)
	$(PY) scripts/build_site.py
	$(BUILT_CMD)
else
	@echo "lint and the unit and site tests run at the lowest priority beside the chapters, the site build and the"
	@echo "browser tests; their log comes last"
	@# (no recursive make here: make -n runs any recipe line that names it)
	@( rc=0; scripts/lowest_priority.sh --pidfile _build/test-units.sid bash -eo pipefail -c '$(LINT_CMD) && $(UNITS_CMD)' \
	     > _build/test-units.log 2>&1 || rc=$$?; \
	   echo $$rc > _build/test-units.rc ) & \
	rc=0; $(PY) -m pytest $(XDIST) -m notebook $(DURATIONS) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc = 0 ]; then $(PY) scripts/build_site.py || rc=$$?; fi; \
	if [ $$rc = 0 ]; then $(BUILT_CMD) || rc=$$?; fi; \
	scripts/lowest_priority.sh --restore _build/test-units.sid; \
	wait; echo "--- lint, unit and site tests (_build/test-units.log) ---"; cat _build/test-units.log; \
	units=$$(cat _build/test-units.rc); \
	echo "chapters, site build and browser tests: exit $$rc; lint, unit and site tests: exit $$units"; \
	test "$$rc" = 0 && test "$$units" = 0
endif

# The built site in the system Chromium (tests/site/test_browser.py): every page, search, tabs, Colab links, and a
# phone-width screenshot of every chapter into _build/screenshots/. Skips with one line where Chromium is missing.
browser: $(STAMP)
	@test -f _build/html/index.html || { echo "no site yet: run 'make site' first" >&2; exit 1; }
	XLAPORT_SITE_DIR=$(CURDIR)/_build/html $(PY) -m pytest $(XDIST) tests/site/test_browser.py -q -p no:cacheprovider

# The chapters and the suite on a busy machine (scripts/soak.py): every chapter in two papermill processes at once,
# then the whole of make test beside two busy loops. Each must pass: the chapters assert counts and CPU-time ratios,
# which other work on the machine does not move. About 30 min on 2 cores; SOAK_ARGS goes to the chapters' run.
.PHONY: soak
soak: $(STAMP)
	$(PY) scripts/soak.py chapters --json _build/soak/chapters.json $(SOAK_ARGS)
	$(PY) scripts/soak.py busy 2 -- $(MAKE) --no-print-directory test

# Each chapter again with the other values its parameters cell offers (metadata.xlaport.matrix): one value
# changed at a time, executed into _build/params/. Too long for every CI run: a scheduled workflow runs it.
test-params: $(STAMP)
	$(PY) scripts/param_matrix.py $(PARAMS_ARGS)

# Each chapter's reader edition for Colab and Jupyter, which the site build writes into _build/html/editions/notebooks/
# (_ext/xlaport_site/editions.py), run top to bottom in a fresh kernel as a Colab runtime would (the setup cell
# skipped): after 'make book'. Too long for make test, a scheduled workflow runs it (.github/workflows/editions.yml).
# EDITIONS="a b" picks chapters.
editions-run: $(STAMP)
	$(PY) scripts/run_editions.py $(EDITIONS)

# The chapters, executed into _build/executed: on JOBS workers, as make test runs them (a chapter keeps about one core).
notebooks: $(STAMP)
	$(PY) -m pytest tests/notebooks $(XDIST) -m notebook $(PYTEST_ARGS)

site: $(STAMP)
	$(PY) scripts/build_site.py

book: notebooks site

# On a TPU VM, a Trainium instance or a CUDA machine: every chapter with nbmake on this machine's accelerator
# (XLAPORT_TARGET=auto), writing a run record under verified/ for the verified-on page. Commit the record.
verify: $(STAMP)
	XLAPORT_TARGET=$${XLAPORT_TARGET:-auto} $(PY) scripts/verify.py

serve:
	@test -f _build/html/index.html || { echo "no site yet: run 'make book' first" >&2; exit 1; }
	@echo "serving http://localhost:$(PORT) (Ctrl-C to stop)"
	$(SYSPY) -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

clean:
	rm -rf _build

# Every URL the book cites (pages, chapters' prose, the reference data files), fetched once each; dead links fail.
# Standard library only, so it needs no venv. Offline it skips with one line. A scheduled workflow runs it weekly.
.PHONY: linkcheck
linkcheck:
	$(SYSPY) scripts/linkcheck.py $(LINKCHECK_ARGS)

# The TPU-VM environment rehearsed on a machine without a TPU: a second venv from requirements-tpu.txt (torch 2.14.1,
# torch_tpu 0.2.0; several GB) plus the toolkit, then every chapter with XLAPORT_TARGET=auto and sockets blocked except
# loopback, twice: under TORCH_DEVICE_BACKEND_AUTOLOAD=0, checking that libtpu never started; then as a reader who set
# no switch (torch_tpu autoloaded in every kernel), checking that each chapter ends within 60 s and that libtpu never
# asked the cloud metadata server for a topology. REHEARSE_ARGS goes to both runs, REHEARSE_NOSWITCH_ARGS to the second.
TPU_VENV ?= .venv-tpu
.PHONY: rehearse-tpu-vm
rehearse-tpu-vm:
	@test -x $(TPU_VENV)/bin/python || $(SYSPY) -m venv $(TPU_VENV)
	$(TPU_VENV)/bin/python -m pip install --progress-bar off -r requirements-tpu.txt
	$(TPU_VENV)/bin/python -m pip install --quiet --no-deps -e .
	TORCH_DEVICE_BACKEND_AUTOLOAD=0 $(TPU_VENV)/bin/python scripts/rehearse_tpu_vm.py $(REHEARSE_ARGS)
	env -u TORCH_DEVICE_BACKEND_AUTOLOAD -u TPU_SKIP_MDS_QUERY $(TPU_VENV)/bin/python scripts/rehearse_tpu_vm.py --no-switch $(REHEARSE_ARGS) $(REHEARSE_NOSWITCH_ARGS)
