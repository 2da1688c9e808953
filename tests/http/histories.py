"""Helpers for the history tests (issue 11): the version verbs on any door, promote, and looks at storage.

`base` is a door's memory URL under /agent_api/v1, as in tests/support.py. The storage helpers read the
embedded moto directly (through tests/http/world.py), so a test proves what really is in the table and the
bucket without reusing the store's own key code.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
from agent_memory.core.settings import settings
from agent_memory.edges.services import reset_services
from agent_memory.store import CACHE, aws_clients
from agent_memory.store.sweeper import SweepReport, sweep

from ..support import Api, Who
from .world import bucket_objects, scan_table

PROFILE = "/profile/memory"


def definition_base(name: str) -> str:
    return f"/profile/agents/{name}/memory"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---- the verbs ---------------------------------------------------------------------------------------


def versions(api: Api, who: Who | None, base: str, path: Any, **extra: Any) -> requests.Response:
    return api.post(f"{base}/versions", who, {"memory": {"path": path, **extra}})


def version_show(api: Api, who: Who | None, base: str, path: Any, lock_version: Any, **extra: Any) -> requests.Response:
    return api.post(f"{base}/versions/show", who, {"memory": {"path": path, "lock_version": lock_version, **extra}})


def _change(lock_version: Any, expected: tuple[Any, Any], path: Any, extra: dict[str, Any]) -> dict[str, Any]:
    body = {
        "path": path,
        "lock_version": lock_version,
        "expected_public_id": expected[0],
        "expected_lock_version": expected[1],
        **extra,
    }
    return {"memory": body}


def rollback(
    api: Api, who: Who, base: str, path: Any, lock_version: Any, expected: tuple[Any, Any], **extra: Any
) -> requests.Response:
    return api.post(f"{base}/rollback", who, _change(lock_version, expected, path, extra))


def redact(
    api: Api, who: Who, base: str, path: Any, lock_version: Any, expected: tuple[Any, Any], **extra: Any
) -> requests.Response:
    return api.post(f"{base}/versions/redact", who, _change(lock_version, expected, path, extra))


def promote(
    api: Api,
    who: Who,
    ws: str,
    source: dict[str, Any],
    target_path: Any,
    expected: tuple[Any, Any] = (None, None),
    **extra: Any,
) -> requests.Response:
    body = {
        "source": source,
        "target_path": target_path,
        "expected_public_id": expected[0],
        "expected_lock_version": expected[1],
        **extra,
    }
    return api.post(f"/workspaces/{ws}/memory/promote", who, {"promote": body})


# ---- reading a history -------------------------------------------------------------------------------


def history(api: Api, who: Who, base: str, path: str) -> list[dict[str, Any]]:
    """Every version the listing shows, newest first (one page: the listing holds at most 100)."""
    r = versions(api, who, base, path, limit=100)
    assert r.status_code == 200, r.text
    assert r.json()["next_cursor"] is None
    rows: list[dict[str, Any]] = r.json()["versions"]
    return rows


def numbers(rows: list[dict[str, Any]]) -> list[int]:
    return [v["lock_version"] for v in rows]


def shown_version(api: Api, who: Who, base: str, path: str, lock_version: int) -> dict[str, Any]:
    r = version_show(api, who, base, path, lock_version)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()["version"]
    return out


def current(api: Api, who: Who, base: str, path: str) -> dict[str, Any]:
    """The document as show answers it, read from S3 itself (the content cache emptied first)."""
    CACHE.clear()
    r = api.show(who, base, path)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()["memory"]
    return out


def author(who: Who, name: str) -> dict[str, Any]:
    """The author record of a change `who` made through a door (no execution)."""
    return {"kind": who.kind, "public_id": who.public_id, "name": name}


# ---- storage -----------------------------------------------------------------------------------------


def version_items(rest: str) -> list[dict[str, Any]]:
    """Every history row (VER#) of the documents at path `rest` (the path after its root), in any anchor."""
    prefix = f"VER#{sha(rest)}#"
    return [i for i in scan_table() if str(i.get("sk", "")).startswith(prefix)]


def doc_content_key(rest: str) -> str:
    items = [i for i in scan_table() if i.get("sk") == f"DOC#{rest}"]
    assert len(items) == 1, items
    return str(items[0]["content_key"])


def version_content_key(rest: str, lock_version: int) -> str | None:
    """The content key the one history row of version `lock_version` at `rest` holds (None: redacted)."""
    rows = [i for i in version_items(rest) if int(i["lock_version"]) == lock_version]
    assert len(rows) == 1, rows
    key = rows[0].get("content_key")
    return None if key is None else str(key)


def objects() -> dict[str, str]:
    """Every content object in the bucket, key -> text."""
    return bucket_objects("content/")


def run_sweep() -> SweepReport:
    """One sweep with no grace and no settle, against the service's own table and bucket and with its bound
    on versions; its clock runs two seconds ahead, so whatever the test wrote just before is past the grace
    (S3 and the version records keep whole seconds)."""
    s = settings()
    ddb, s3 = aws_clients()
    return sweep(
        ddb,
        s3,
        s.table_name,
        s.bucket_name,
        grace_seconds=0,
        settle_seconds=0,
        versions_kept=s.versions_kept,
        clock=lambda: time.time() + 2,
        sleep=lambda _: None,
    )


@contextmanager
def versions_kept(k: int) -> Iterator[None]:
    """AGENT_MEMORY_VERSIONS_KEPT=k for the in-process gateway while the block runs, then the default."""
    old = os.environ.get("AGENT_MEMORY_VERSIONS_KEPT")
    os.environ["AGENT_MEMORY_VERSIONS_KEPT"] = str(k)
    settings.cache_clear()
    reset_services()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("AGENT_MEMORY_VERSIONS_KEPT", None)
        else:
            os.environ["AGENT_MEMORY_VERSIONS_KEPT"] = old
        settings.cache_clear()
        reset_services()
