"""The server's CLI commands that run in-process: `protocol-schema`, the keepalive setting,
and a parser that loads no world's heavy modules."""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys

import pytest

from server.cli import main
from server.config import ServerConfig
from server.front import hypercorn_config
from server.worlds import registry as default_registry


def test_protocol_schema_prints_every_op(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol-schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert sorted(schema["ops"]) == sorted(spec.name for spec in default_registry())
    assert schema["ops"]["lobby.create"]["role"] == "agent"


def test_hypercorn_logs_into_ours_and_closes_idle_connections() -> None:
    """Hypercorn's errors reach our error log rather than nowhere; an idle keep-alive HTTP
    connection ends after the budget's handshake timeout."""
    hc = hypercorn_config(2, ServerConfig().budgets.handshake_timeout)
    assert hc.errorlog is logging.getLogger("hypercorn.error")
    assert (hc.keep_alive_timeout, hc.graceful_timeout) == (5.0, 2)


def test_building_the_parser_imports_no_heavy_module() -> None:
    """`petridish --help` stays fast: world packages load their engines on first use."""
    probe = ("import sys; from server.cli import build_parser; build_parser(); "
             "print(sorted({m.partition('.')[0] for m in sys.modules} & "
             "{'numpy', 'numba', 'httpx', 'sqlite3', 'trio', 'starlette', 'attrs', 'mcp'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert out.stdout == "[]\n"


@pytest.mark.parametrize("package", ["actors.lab", "actors.puzzle"])
def test_lazy_world_packages_export_every_public_name(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(module._PUBLIC)
    for name in module.__all__:
        value = getattr(module, name)
        assert getattr(value, "__name__", name) == name or not callable(value), name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match=r"has no attribute 'nope'$"):
        module.nope  # noqa: B018


def test_lab_validate_is_the_function_of_a_plain_package() -> None:
    import types

    import actors.lab
    import actors.lab.validation  # the module that holds it has a name of its own

    assert type(actors.lab) is types.ModuleType  # no module-class swap
    assert callable(actors.lab.validate) and actors.lab.validate.__module__ == \
        "actors.lab.validation"
