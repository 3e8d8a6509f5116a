# Two commands for a newcomer: `make app` and `make test`. Both are idempotent: they install the
# Debian packages they need when they can (root and apt-get), create .venv and install aisize into
# it the first time (or when pyproject.toml changes), then start the app / run the whole suite.
# Without root or apt they say loudly what is missing; the tests that need it skip and are listed.
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8866
TEAM_PORT ?= 8000
# Test workers (pytest-xdist): by default one per core plus one (tests/conftest.py: a fifth of the cores
# sat idle while tests waited on sleeps and servers); each takes whole test files. JOBS=0 runs in this process.
JOBS ?= auto
# Optional extras to install; CI adds the PyTorch cross-check and the kernel import:
# make test EXTRAS=test,team,torch,kernels
EXTRAS ?= test,team
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
PROXY := $(VENV)/node/node_modules/.bin/configurable-http-proxy

# Debian packages, each as "package:what-shows-it-is-there" (a command, or a font file for fonts).
APP_PACKAGES := chromium:chromium fonts-liberation:/usr/share/fonts/truetype/liberation \
                fonts-dejavu-core:/usr/share/fonts/truetype/dejavu
TEST_PACKAGES := $(APP_PACKAGES) poppler-utils:pdftotext nodejs:node npm:npm

.PHONY: app test team fuzz bench wheel clean

# $(call system_packages,LIST): install what LIST lacks, or say what will not work without it.
define system_packages
	@missing=""; for entry in $(1); do pkg=$${entry%%:*}; probe=$${entry#*:}; \
	  if [ -e "$$probe" ] || command -v "$$probe" >/dev/null 2>&1; then :; else missing="$$missing $$pkg"; fi; \
	done; \
	if [ -n "$$missing" ] && [ -z "$(NO_SYSTEM_PACKAGES)" ] && command -v apt-get >/dev/null 2>&1 \
	   && [ "$$(id -u)" = 0 ]; then \
	  echo "make: installing Debian packages:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	    || echo "!!! make: apt-get could not install:$$missing"; \
	elif [ -n "$$missing" ]; then \
	  echo "!!! make: missing Debian packages:$$missing (as root: apt-get install$$missing)."; \
	  echo "!!! Without them PDF reports, browser tests and the team server do not run; their tests SKIP,"; \
	  echo "!!! listed at the end of the test run."; \
	fi
endef

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

# configurable-http-proxy (npm) for the team server, inside the venv. 5.1 runs on Node 18 (Debian 12)
# and later; 5.2+ need Node 20.
$(PROXY):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --prefix $(VENV)/node --no-audit --no-fund --loglevel=error configurable-http-proxy@5.1; \
	else echo "!!! make: npm not found: no configurable-http-proxy, so no team server; its test SKIPs"; fi

app: $(STAMP)
	$(call system_packages,$(APP_PACKAGES))
	$(VENV)/bin/aisize app --port $(PORT)

test: $(STAMP)
	$(call system_packages,$(TEST_PACKAGES))
	@$(MAKE) --no-print-directory $(PROXY)
	$(VENV)/bin/pytest -n $(JOBS) --dist loadfile

# The team server: JupyterHub with logins, one workbook per user, on http://127.0.0.1:$(TEAM_PORT)/
team: $(STAMP)
	$(call system_packages,$(TEST_PACKAGES))
	@$(MAKE) --no-print-directory $(PROXY)
	$(VENV)/bin/aisize team --port $(TEAM_PORT)

# Deep fuzzing by hand: random seeds, 40x the examples (tests/fuzz_profiles.py).
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=nightly $(VENV)/bin/pytest -p no:cacheprovider tests/test_fuzz_api.py \
	  tests/test_fuzz_scenario.py tests/test_fuzz_cli.py tests/test_queueing_properties.py

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

# Build the wheel and sdist, check them, install the wheel in a fresh venv and run it (what CI does).
wheel: $(STAMP)
	bash .ci/wheel

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist
