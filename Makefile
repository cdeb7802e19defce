# The commands of the README. Settings (override on the command line or in the
# environment): HOST, PORT and DATA (the server's data directory: event store, tokens,
# the owner token), GAME and SIZE (the field `make agent` plays), NAME (`make token`),
# TOKEN (the agents' token; default: the owner token kept in DATA).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
DATA ?= ./data
GAME ?= demo
SIZE ?= 20
NAME ?= me
TOKEN ?=
# pip runs again only when pyproject.toml changed since the last install of the same kind.
INSTALLED := $(VENV)/.installed
INSTALLED_TEST := $(VENV)/.installed-test
AGENT_TOKEN = $(or $(TOKEN),$$(cat $(DATA)/owner.token))

.PHONY: serve test install install-test system-deps bench token agent mcp-agent

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(INSTALLED_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(INSTALLED)

install: $(INSTALLED)

install-test: $(INSTALLED_TEST)

# Debian chromium (browser tests), glslang-tools (shader compile gate), postgresql (the
# shared store's tests start a private cluster from its binaries) and espeak-ng with
# opus-tools (the lab's voice track is remade bit for bit), strace (a test reads the token
# files' system calls; bench profiles count them), when root; one apt run.
PG_CTL := $(wildcard /usr/lib/postgresql/*/bin/pg_ctl)
system-deps:
	@if [ "$$(id -u)" = 0 ] && { ! command -v chromium >/dev/null || ! command -v glslangValidator >/dev/null || [ -z "$(PG_CTL)" ] || ! command -v espeak-ng >/dev/null || ! command -v opusenc >/dev/null || ! command -v strace >/dev/null; }; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium glslang-tools postgresql espeak-ng opus-tools strace; \
	fi

# `field warm` compiles the field's solver once (cached on disk; ~1 s when cached), so
# the first field after a fresh clone does not wait for it.
serve: install
	$(BIN)/petridish field warm
	$(BIN)/petridish serve --host $(HOST) --port $(PORT) --data $(DATA)

test: install-test system-deps
	$(BIN)/python -m pytest -m "not deep and not live_model" -p no:cacheprovider --durations=30

bench: install-test
	$(BIN)/python -m bench $(NAME)

# An agent token for NAME, printed once (only its hash is kept in DATA).
token: install
	$(BIN)/petridish token create --role agent --name $(NAME) --data $(DATA)

# The example agent plays field GAME over the websocket (starting a SIZE x SIZE field
# first if it does not exist), as TOKEN or else as the server's owner.
agent: install
	$(BIN)/python examples/field_agent.py --url ws://$(HOST):$(PORT)/ws \
		--token "$(AGENT_TOKEN)" --game $(GAME) --start $(SIZE)

# The same agent over MCP (the seed's tools): it starts a new SIZE x SIZE game and plays it.
mcp-agent: install
	$(BIN)/python examples/field_mcp.py --url http://$(HOST):$(PORT)/mcp \
		--token "$(AGENT_TOKEN)" --start $(SIZE)
