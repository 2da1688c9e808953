"""The TypeScript client (clients/typescript): built with tsc and tested with Node's test runner against a
real local server, as a TypeScript runtime would use it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from agent_memory_sdk.local.runtime import LocalService

from ..support import client_room

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            "npm is not installed: .ci/run installs Node.js 20 (the TypeScript client is built and tested here)"
        )
    return npm


def test_the_typescript_client_passes_its_tests_against_the_service(fresh: LocalService) -> None:
    npm = _npm()
    if not (PACKAGE / "node_modules").is_dir():
        # .ci/run installs them (`npm ci --prefix clients/typescript`); a developer's first run does it here.
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True, timeout=600)
    # Given a Human's token on a fresh server
    _, owner, _ = client_room(fresh.url, fresh.operator_key)
    assert owner.token
    env = {**os.environ, "AGENT_MEMORY_URL": fresh.url, "AGENT_MEMORY_TOKEN": owner.token}
    # When the package builds and runs its tests, its live tests included
    done = subprocess.run(
        [npm, "test"], cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    # Then every test ran and passed: none was skipped for want of the server
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# skipped 0" in done.stdout, done.stdout[-2000:]
    assert "# pass 0\n" not in done.stdout
