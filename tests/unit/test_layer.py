"""The Lambda layer's copy step (shared/Makefile, what `sam build` runs) ships the server side only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
PACKAGE = SHARED / "agent_memory"


def test_the_layer_is_the_server_package_alone(layer: Path) -> None:
    # Given the built layer, Then it holds agent_memory only: no client, local server or MCP relay,
    assert [p.name for p in layer.iterdir()] == ["agent_memory"]
    assert not list(layer.rglob("mcp_server.py"))
    assert not list(layer.rglob("gateway.py"))
    assert not list(layer.rglob("gateway.*.pyc"))


def test_the_layer_ships_bytecode_of_the_runtime_interpreter(layer: Path) -> None:
    # Given the layer built with the runtime's interpreter (here: this one), Then every module has its
    # bytecode for that interpreter, compiled from the shipped source and trusted without a file-time check
    # (Lambda's /opt is read-only: without it every cold start compiles what it imports).
    import importlib.util

    tag = sys.implementation.cache_tag
    for source in (layer / "agent_memory").rglob("*.py"):
        compiled = Path(importlib.util.cache_from_source(str(source)))
        assert compiled.exists(), source
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
        assert flags == 0b01, f"{compiled}: not an unchecked-hash pyc"  # hash-based, check_source off
    assert {p.name.split(".")[1] for p in layer.rglob("*.pyc")} == {tag}


def test_the_layer_carries_every_server_module_unchanged(layer: Path) -> None:
    # Given the source package, Then the layer holds exactly its modules, byte for byte.
    sources = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    shipped = {p.relative_to(layer / "agent_memory").as_posix() for p in (layer / "agent_memory").rglob("*.py")}
    assert shipped == sources
    assert {
        "api/contract.py",
        "core/resolver.py",
        "edges/http/glue.py",
        "edges/http/handlers/memory.py",
        "edges/tools/lambda_entry.py",
        "store/documents.py",
        "store/sweeper.py",
    } <= shipped
    for rel in shipped:
        assert (layer / "agent_memory" / rel).read_bytes() == (PACKAGE / rel).read_bytes()


IMPORT_EVERY_FUNCTION = """
import importlib.util, pathlib, sys
layer, functions = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
import agent_memory
assert pathlib.Path(agent_memory.__file__).is_relative_to(layer), agent_memory.__file__
apps = sorted(functions.glob("*/app.py"))
assert apps
for app in apps:
    spec = importlib.util.spec_from_file_location(f"app_{app.parent.name}", app)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.handler), app
loaded = [m for m in sys.modules if m.startswith(("agent_memory_sdk", "moto", "mcp"))]
assert not loaded, loaded
print(len(apps))
"""


def test_every_function_imports_from_the_layer(layer: Path) -> None:
    # Given the layer first on the path (its requirements from this virtualenv, as Lambda brings boto3),
    env = {**os.environ, "PYTHONPATH": str(layer)}
    # When every functions/<route>/app.py is imported, Then each finds its handler without the excluded code.
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_FUNCTION, str(layer), str(ROOT / "functions")],
        env=env,
        cwd=layer,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(list((ROOT / "functions").glob("*/app.py")))
