"""Lambda SnapStart's runtime hooks: what a function does before its snapshot and after each restore.

With SnapStart (template.yaml: `SnapStart: ApplyOn: PublishedVersions` on every function) Lambda runs the
init phase once per published version, snapshots the memory, and starts later environments from that
snapshot. So init may do the costly, container-wide work a cold start would otherwise pay on its first
request (docs/performance.md, "Cold start"), and what must differ between environments is refreshed after
each restore (docs/decisions.md, "Issue 27").

- `before_snapshot(module)`: import the handler module's request models and the services every verb
  shares, build the store's AWS clients (no request is sent: a snapshot must not hold an open
  connection) and the logger and metrics.
- `after_restore()`: every restored environment starts from the same memory, so it re-seeds `random`
  (retry jitter), restarts the id generator's millisecond sequence, and replaces the AWS clients with
  new ones on the same parsed service models, so no two environments share a connection pool or cached
  credentials; the warm models make that cheap.

`register(module)` is called by each function's entry at import. It does nothing unless Lambda is
initialising a SnapStart version (AWS_LAMBDA_INITIALIZATION_TYPE is "snap-start"), so local runs and
on-demand functions pay nothing; `snapshot_restore_py` (provided by Lambda's Python runtime) is imported
only then, and where it is missing the warm-up runs at once, without the restore hook.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import random
from typing import Any

SNAP_START = "snap-start"
# The request-model module a handler module validates with, where the names differ.
REQUEST_MODELS = {"conversation": "memory", "history": "memory", "entries": "conversations"}


def register(module: str) -> bool:
    """Register the hooks for a function whose handler lives in `module` (a handlers' or tools' module
    name); True when they were registered with the runtime."""
    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") != SNAP_START:
        return False
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:  # not in this runtime: warm now; the init phase is snapshotted all the same
        before_snapshot(module)
        return False
    register_before_snapshot(before_snapshot, module)
    register_after_restore(after_restore)
    return True


def before_snapshot(module: str) -> dict[str, Any]:
    """Warm what every request of this function would build first; returns what was made (tests read it)."""
    from agent_memory.core import observability
    from agent_memory.edges import services
    from agent_memory.edges.requests.validation import Model
    from agent_memory.store.clients import ddb_client, s3_client

    requests = f"agent_memory.edges.requests.{REQUEST_MODELS.get(module, module)}"
    if importlib.util.find_spec(requests) is not None:
        # The route's request models, their checks built (each is otherwise built by its first request).
        for value in vars(importlib.import_module(requests)).values():
            if isinstance(value, type) and issubclass(value, Model) and value.__module__ == requests:
                value.model_fields  # noqa: B018 - reading it builds the model
    made = {
        "resolver": services.resolver(),  # the store and the settings with it
        "ddb": ddb_client(),
        "s3": s3_client(),
        "logger": observability.logger(),
        "metrics": observability.metrics(),
    }
    return made


def after_restore() -> None:
    """Make this restored environment's state its own (see the module's docstring)."""
    from agent_memory.core import ids
    from agent_memory.store.clients import ddb_client, reset_clients, s3_client

    random.seed()  # from os.urandom: each restore draws its own jitter
    with ids._lock:
        ids._last_ms, ids._seq = 0, 0
    reset_clients(keep_models=True)
    ddb_client()
    s3_client()
