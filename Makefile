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

# Debian chromium (browser tests) and glslang-tools (shader compile gate), when root.
system-deps:
	@if [ "$$(id -u)" = 0 ] && { ! command -v chromium >/dev/null || ! command -v glslangValidator >/dev/null; }; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium glslang-tools; \
	fi

serve: install
	$(BIN)/petridish serve --host $(HOST) --port $(PORT) --data $(DATA)

test: install-test system-deps
	$(BIN)/python -m pytest -m "not deep and not live_model" -p no:cacheprovider

bench: install-test
	$(BIN)/python -m bench $(NAME)
