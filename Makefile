# The two set-up commands of the README: `make serve` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
DATA ?= ./data

.PHONY: serve test install install-test system-deps bench

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-test: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

# Debian chromium (browser tests), glslang-tools (shader compile gate) and postgresql (the
# shared store's tests start a private cluster from its binaries), when root; one apt run.
PG_CTL := $(wildcard /usr/lib/postgresql/*/bin/pg_ctl)
system-deps:
	@if [ "$$(id -u)" = 0 ] && { ! command -v chromium >/dev/null || ! command -v glslangValidator >/dev/null || [ -z "$(PG_CTL)" ]; }; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium glslang-tools postgresql; \
	fi

serve: install
	$(BIN)/petridish serve --host $(HOST) --port $(PORT) --data $(DATA)

test: install-test system-deps
	$(BIN)/python -m pytest -m "not deep and not live_model" -p no:cacheprovider

bench: install-test
	$(BIN)/python -m bench $(NAME)
