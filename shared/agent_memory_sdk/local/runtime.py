"""Start the whole service on one machine: storage (embedded moto, or AWS_ENDPOINT_URL) plus the gateway."""

from __future__ import annotations

import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_memory.core.settings import GIT_FILE_ROOTS
from agent_memory.edges.services import reset_services
from agent_memory.store import CACHE, aws_clients, reset_store
from agent_memory.store.clients import LOCAL_SEND

from agent_memory_sdk.local.gateway import Gateway
from agent_memory_sdk.local.moto_backend import EmbeddedMoto, create_resources
from agent_memory_sdk.local.template import load_template


def project_root() -> Path:
    """The checkout holding template.yaml: the working directory, or above this package."""
    for base in (Path.cwd(), *Path(__file__).resolve().parents):
        if (base / "template.yaml").is_file() and (base / "functions").is_dir():
            return base
    raise FileNotFoundError("template.yaml not found: run from the project checkout")


@dataclass
class LocalService:
    gateway: Gateway
    moto: EmbeddedMoto | None
    template: dict[str, Any]
    operator_key: str
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self.gateway.url

    def start(self) -> LocalService:
        self._thread = threading.Thread(target=self.gateway.serve_forever, name="gateway", daemon=True)
        self._thread.start()
        return self

    def create_resources(self) -> None:
        ddb, s3 = aws_clients()
        create_resources(ddb, s3, self.template, os.environ["TABLE_NAME"], os.environ["BUCKET_NAME"])

    def reset(self) -> None:
        """Empty the embedded moto (its memory grows without bound otherwise) and recreate the resources."""
        if self.moto is None:
            raise RuntimeError("reset only applies to the embedded moto")
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{self.moto.url}/moto-api/reset", method="POST")).read()
        # The clients stay: the endpoint has not moved, and building them again costs more than the reset.
        # Cached content must go, since a fresh store may reuse nothing but could meet the same keys.
        CACHE.clear()
        self.create_resources()

    def stop(self) -> None:
        self.gateway.shutdown()
        if self.moto is not None:
            if self.moto.send in LOCAL_SEND:
                LOCAL_SEND.remove(self.moto.send)
            self.moto.stop()


@dataclass(frozen=True)
class Storage:
    """Where the local service keeps its data: a folder (the default), nowhere (ephemeral), or elsewhere."""

    data_dir: Path | None
    storage_port: int = 0
    repair: bool = False

    @classmethod
    def from_environment(
        cls,
        root: Path,
        data_dir: str | None = None,
        ephemeral: bool | None = None,
        storage_port: int | None = None,
        repair: bool = False,
    ) -> Storage:
        """Arguments first, then AGENT_MEMORY_DATA_DIR / AGENT_MEMORY_EPHEMERAL / AGENT_MEMORY_STORAGE_PORT."""
        if ephemeral is None:
            ephemeral = os.environ.get("AGENT_MEMORY_EPHEMERAL", "").strip().lower() in ("1", "true", "yes", "on")
        folder = data_dir or os.environ.get("AGENT_MEMORY_DATA_DIR") or str(root / DEFAULT_DATA_DIR)
        port = storage_port if storage_port is not None else int(os.environ.get("AGENT_MEMORY_STORAGE_PORT") or 0)
        return cls(None if ephemeral else Path(folder).expanduser().resolve(), port, repair)


# The checkout's own folder (ignored by git), so a clone's `make run` keeps its data beside it.
DEFAULT_DATA_DIR = ".agent-memory"


def name_git_root(storage: Storage) -> None:
    """A developer's own repositories may be synced into a Memory locally, from one folder of the data
    directory only (<data>/git, created here); AWS reads none. An operator's own AGENT_MEMORY_GIT_FILE_ROOTS
    wins, and an ephemeral service (tests) names none unless told."""
    if storage.data_dir is not None and GIT_FILE_ROOTS not in os.environ:
        git_root = storage.data_dir / "git"
        git_root.mkdir(parents=True, exist_ok=True)
        os.environ[GIT_FILE_ROOTS] = str(git_root)


def start_local(port: int = 3000, root: Path | None = None, storage: Storage | None = None) -> LocalService:
    """Configure the environment, bring up storage and return the gateway, started.

    `storage` defaults to an ephemeral embedded moto: what a test or a benchmark wants. `agent-memory
    serve` passes the data folder the user chose (or the default one).
    """
    root = root or project_root()
    storage = storage or Storage(data_dir=None)
    template = load_template(root / "template.yaml")
    os.environ.setdefault("TABLE_NAME", "agent-memory")
    os.environ.setdefault("BUCKET_NAME", "agent-memory-content")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    # Every request would print an EMF document to the terminal; CloudWatch is the only reader of those.
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    name_git_root(storage)
    moto = None
    if not os.environ.get("AWS_ENDPOINT_URL"):
        moto = EmbeddedMoto(storage.storage_port, storage.data_dir, repair=storage.repair).start()
        os.environ["AWS_ENDPOINT_URL"] = moto.url
        # moto accepts any credentials; real ones must never be sent to it.
        os.environ["AWS_ACCESS_KEY_ID"] = "testing"
        os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
        os.environ.pop("AWS_SESSION_TOKEN", None)
        os.environ.pop("AWS_PROFILE", None)
    # Hex: a key starting with "-" would read as an option where a command line carries it.
    if moto is not None and moto.data is not None:
        operator_key = moto.data.operator_key()
    else:
        operator_key = os.environ.get("AGENT_MEMORY_OPERATOR_KEY") or secrets.token_hex(24)
    os.environ["AGENT_MEMORY_OPERATOR_KEY"] = operator_key
    LOCAL_SEND.clear()
    if moto is not None:
        LOCAL_SEND.append(moto.send)
    reset_store()
    reset_services()
    try:
        service = LocalService(Gateway(root, template, port), moto, template, operator_key)
        service.create_resources()
    except BaseException:
        if moto is not None:
            moto.stop()
        raise
    return service.start()
