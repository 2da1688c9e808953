"""The Lambda layer's copy step (shared/Makefile, what `sam build` runs) ships the server side only."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
PACKAGE = SHARED / "agent_memory"


def _excluded(rel: str, names: list[str]) -> bool:
    return any(rel == n or rel.startswith(n + "/") for n in names)


def layer_exclude() -> list[str]:
    """The one exclusion list: LAYER_EXCLUDE at the top of shared/Makefile."""
    m = re.search(r"^LAYER_EXCLUDE\s*:=(.*)$", (SHARED / "Makefile").read_text(), re.MULTILINE)
    assert m, "shared/Makefile has no LAYER_EXCLUDE line"
    return m.group(1).split()


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The layer as SAM would build it, minus the pip step (no network): the `python/` directory."""
    artifacts = tmp_path_factory.mktemp("layer")
    # Run from elsewhere, as SAM runs it from a scratch copy: the Makefile must find its sources itself.
    done = subprocess.run(
        ["make", "-s", "-f", str(SHARED / "Makefile"), "build-SharedLayer", "INSTALL_REQUIREMENTS=0"],
        cwd=artifacts,
        env={**os.environ, "ARTIFACTS_DIR": str(artifacts)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return artifacts / "python"


def test_the_exclusion_list_names_the_developer_side() -> None:
    # Given the Makefile's list, Then it names the client and the local gateway (which holds the MCP relay).
    assert {"client.py", "local", "integrations"} <= set(layer_exclude())


def test_the_layer_leaves_out_client_gateway_and_mcp_relay(layer: Path) -> None:
    # Given the built layer, Then nothing only a developer runs is in it, nor bytecode from this machine.
    pkg = layer / "agent_memory"
    assert not (pkg / "client.py").exists()
    assert not (pkg / "local").exists()
    assert not list(pkg.rglob("mcp_server.py"))
    assert not list(pkg.rglob("gateway.py"))
    for name in layer_exclude():
        assert not (pkg / name).exists(), name
    assert not list(pkg.rglob("__pycache__"))
    # And without the pip step the package is all there is.
    assert [p.name for p in layer.iterdir()] == ["agent_memory"]


def test_the_layer_carries_every_server_module_unchanged(layer: Path) -> None:
    # Given the source package, When the excluded paths are set aside,
    names = layer_exclude()
    sources = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    expected = {rel for rel in sources if not _excluded(rel, names)}
    shipped = {p.relative_to(layer / "agent_memory").as_posix() for p in (layer / "agent_memory").rglob("*.py")}
    # Then the layer holds exactly the rest, byte for byte.
    assert shipped == expected
    for rel in ("__init__.py", "resolver.py", "observability.py", "web/glue.py", "web/lambda_entry.py"):
        assert rel in shipped
    assert {
        "contract.py",
        "web/handlers/memory.py",
        "web/tool_lambda.py",
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
loaded = [m for m in sys.modules if m.startswith(("agent_memory.local", "agent_memory.client", "moto", "mcp"))]
assert not loaded, loaded
try:
    from agent_memory import MemoryClient
except ImportError as exc:
    assert "does not ship" in str(exc), exc
else:
    raise AssertionError("the layer has no client")
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
