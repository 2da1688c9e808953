"""Lambda SnapStart's hooks (edges/snapstart.py): warm before the snapshot, unique after each restore.

Each test runs in an interpreter of its own, as Lambda's init does: the function's app.py is imported with
AWS_LAMBDA_INITIALIZATION_TYPE=snap-start, and the hooks it registered are run as the runtime runs them
(`snapshot_restore_py`'s registries). A restore is played by forking after the before-snapshot hooks: each
child starts from the same memory, as two environments restored from one snapshot do (with `random`'s state
put back: Python re-seeds it on fork, and a restore has no fork).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..coldstart import run_in

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, os, random, socket, sys
def refuse(*a, **k):
    raise RuntimeError("a SnapStart hook opened a connection: a snapshot must not hold one")
socket.socket.connect = refuse
socket.create_connection = refuse

sys.path.insert(0, os.getcwd())
import app  # registers the hooks, as Lambda's init imports the handler
from snapshot_restore_py import get_after_restore, get_before_snapshot
from agent_memory.store import clients
from agent_memory.core import ids

out = {"before": len(get_before_snapshot()), "after": len(get_after_restore()),
       "clients_at_import": sorted(clients._CLIENTS)}
for fn, args, kwargs in get_before_snapshot():
    fn(*args, **kwargs)
out["clients_in_snapshot"] = sorted(clients._CLIENTS)
out["loaded"] = sorted(m for m in ("pydantic", "aws_lambda_powertools", "agent_memory.edges.requests.memory",
                                   "agent_memory.core.resolver") if m in sys.modules)
snapshot_clients = {k: id(v) for k, v in clients._CLIENTS.items()}
snapshot_loader = id(clients._loader())
ids.uuid7()  # the id sequence has state from before the snapshot
snapshot_random = random.getstate()

restores = []
for _ in range(2):
    r, w = os.pipe()
    if os.fork() == 0:  # a restored environment: the snapshot's memory
        os.close(r)
        random.setstate(snapshot_random)  # fork re-seeds random in the child; a restore has no fork
        if sys.argv[1] == "hooks":
            for fn, args, kwargs in get_after_restore():
                fn(*args, **kwargs)
        seen = {"random": random.random(), "last_ms": ids._last_ms,
                "same_clients": {k: id(v) == snapshot_clients.get(k) for k, v in clients._CLIENTS.items()},
                "same_loader": id(clients._loader()) == snapshot_loader, "id": ids.uuid7()}
        os.write(w, json.dumps(seen).encode())
        os._exit(0)
    os.close(w)
    os.wait()
    restores.append(json.loads(os.read(r, 65536)))
    os.close(r)
out["restores"] = restores
print(json.dumps(out))
"""


def _run(mode: str, function: str = "conversation_memory_show") -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "shared"),
        "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    return run_in(function, _CHILD, mode, env=env)


def test_before_the_snapshot_the_route_is_warm_and_its_clients_exist_without_a_connection() -> None:
    # Given a route's function initialising for SnapStart,
    out = _run("hooks")
    # Then its import registered one hook each way and built no client yet (a non-SnapStart import stays light),
    assert (out["before"], out["after"]) == (1, 1)
    assert out["clients_at_import"] == []
    # and the before-snapshot hook built both clients, the request models, the logger and the resolver,
    # without opening a connection (the child refuses any), and without pydantic (only a schema needs it).
    assert out["clients_in_snapshot"] == ["dynamodb", "s3"]
    assert out["loaded"] == [
        "agent_memory.core.resolver",
        "agent_memory.edges.requests.memory",
        "aws_lambda_powertools",
    ]


def test_after_each_restore_randomness_ids_and_clients_are_the_environments_own() -> None:
    # Given two environments restored from one snapshot, each running the after-restore hook,
    one, two = _run("hooks")["restores"]
    # Then their random streams differ, the id sequence restarted, and the clients are new ones built on
    # the snapshot's parsed service models.
    assert one["random"] != two["random"]
    for seen in (one, two):
        assert seen["same_clients"] == {"dynamodb": False, "s3": False}
        assert seen["same_loader"] is True
    assert one["id"] != two["id"]


def test_without_the_hook_restored_environments_would_share_a_random_stream() -> None:
    # Given the same two restores without the hook (what the hook is for), Then both draw the same number
    # and keep the snapshot's clients.
    one, two = _run("none")["restores"]
    assert one["random"] == two["random"]
    assert one["same_clients"] == {"dynamodb": True, "s3": True}


def test_each_handler_modules_warm_up_imports_the_request_models_it_validates_with() -> None:
    # Given the skills route (handler module `conversation`, whose models live in requests/memory.py),
    out = _run("hooks", "conversation_skills_list")
    # Then its warm-up built them too.
    assert "agent_memory.edges.requests.memory" in out["loaded"]


def test_outside_snapstart_the_entry_registers_nothing() -> None:
    # Given an ordinary (on-demand) init, Then importing a route registers no hook and builds no client.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "shared")}
    env.pop("AWS_LAMBDA_INITIALIZATION_TYPE", None)
    code = (
        "import sys, os; sys.path.insert(0, os.getcwd()); import app; "
        "from snapshot_restore_py import get_before_snapshot; from agent_memory.store import clients; "
        "print(len(get_before_snapshot()), len(clients._CLIENTS), 'pydantic' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "functions" / "conversation_memory_show",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "0", "False"]
