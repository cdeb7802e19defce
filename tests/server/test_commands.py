"""The server's CLI commands that run in-process: `protocol-schema` and the keepalive setting."""

from __future__ import annotations

import json

import pytest

from protocol.registry import default_registry
from server.app import _hypercorn_config
from server.cli import main
from server.config import ServerConfig


def test_protocol_schema_prints_every_op(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol-schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert sorted(schema["ops"]) == sorted(spec.name for spec in default_registry())
    assert schema["ops"]["lobby.create"]["role"] == "agent"


def test_server_settings_reach_hypercorn() -> None:
    """Keepalive pings and the hard frame cap are Hypercorn's job; check they are handed over."""
    hc = _hypercorn_config(ServerConfig(port=0, max_frame=1000, hard_frame_factor=3,
                                        ping_interval=7.5, graceful_timeout=2))
    assert (hc.websocket_ping_interval, hc.websocket_max_message_size, hc.graceful_timeout) == \
        (7.5, 3000, 2)
    assert hc.bind == ["127.0.0.1:0"]
