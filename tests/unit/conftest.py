"""Unit tests run with the network blocked; a store test gets moto in-process, not the local gateway."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_memory.store import DynamoStore, get_store, reset_store
from agent_memory_sdk.local.moto_backend import create_resources, patch_moto_for_scale
from agent_memory_sdk.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]


class NetworkBlocked(RuntimeError):
    """A unit test tried to open a connection."""


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection attempt fails loudly: a unit test that reaches for the network is a bug."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NetworkBlocked(f"unit tests may not open connections (tried {args[1:] or args})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return load_template(ROOT / "template.yaml")


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any]) -> Iterator[DynamoStore]:
    """A store on an empty table and bucket, built from template.yaml, in moto in-process."""
    from moto import mock_aws
    from moto.core.botocore_stubber import BotocoreStubber

    # The HTTP tests point the process at the embedded moto server; these clients must not follow it.
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("TABLE_NAME", "agent-memory-unit")
    monkeypatch.setenv("BUCKET_NAME", "agent-memory-unit-content")
    patch_moto_for_scale()
    # moto is not atomic across threads (platform-facts.md): one request at a time, as DynamoDB is per item.
    lock = threading.Lock()
    handle = BotocoreStubber.__call__

    def serialised(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        with lock:
            return handle(self, event_name, request, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", serialised)
    with mock_aws():
        # The clients are built inside the mock, so every request they send is answered in-process.
        reset_store()
        s = get_store()
        create_resources(s.ddb, s.s3, template, s.table, s.bucket)
        yield s
    reset_store()


@pytest.fixture(scope="session")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The layer as SAM would build it, minus the pip step (no network): its `python/` directory, built by
    shared/Makefile with this interpreter, run from elsewhere as SAM runs it from a scratch copy."""
    artifacts = tmp_path_factory.mktemp("layer")
    done = subprocess.run(
        [
            "make",
            "-s",
            "-f",
            str(ROOT / "shared" / "Makefile"),
            "build-SharedLayer",
            "INSTALL_REQUIREMENTS=0",
            f"PYTHON={sys.executable}",
        ],
        cwd=artifacts,
        env={**os.environ, "ARTIFACTS_DIR": str(artifacts)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return artifacts / "python"
