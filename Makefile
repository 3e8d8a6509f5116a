# Two commands for a newcomer: `make app` and `make test`. Both are idempotent:
# they create .venv and install aisize into it the first time (or when
# pyproject.toml changes), then start the app / run the whole test suite.
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8866
# Optional extras to install; CI adds the PyTorch cross-check: make test EXTRAS=test,torch
EXTRAS ?= test
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: app test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

app: $(STAMP)
	$(VENV)/bin/aisize app --port $(PORT)

test: $(STAMP)
	$(VENV)/bin/pytest

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
