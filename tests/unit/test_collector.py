"""A Lambda function's cold start runs with the collector paused, and its first answer resumes it (edges/collector.py).

Each case is a fresh interpreter started in a function's folder, as Lambda starts one, so what it reports
is the process's own collector state, not this test process's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ..coldstart import run_in

ROOT = Path(__file__).resolve().parents[2]

# Import the function, report the collector; answer one event (no credentials: answered without any AWS
# call), report again, then answer a second one.
_PROBE = """
import gc, json, sys
sys.path.insert(0, ".")
import app
seen = {"held": not gc.isenabled()}
first = app.handler(json.loads(sys.argv[1]), None)
status = first.get("statusCode") or first.get("error", {}).get("code")
seen |= {"status": status, "after": gc.isenabled(), "frozen": gc.get_freeze_count()}
app.handler(json.loads(sys.argv[1]), None)
seen["still"] = gc.isenabled()
print(json.dumps(seen))
"""


def _probe(function: str, event: dict[str, object], *, in_lambda: bool) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    env |= {"PYTHONPATH": str(ROOT / "shared"), "AWS_DEFAULT_REGION": "us-east-1"}
    if in_lambda:
        env["AWS_LAMBDA_FUNCTION_NAME"] = function
    return run_in(function, _PROBE, json.dumps(event), env=env)


def _route_event() -> dict[str, object]:
    event: dict[str, object] = json.loads((ROOT / "events" / "sync_memory.json").read_text(encoding="utf-8"))
    event["headers"] = {}  # no credentials: a 401, answered before anything is read
    return event


def test_a_functions_cold_start_holds_the_collector_until_its_first_answer_then_freezes_and_resumes() -> None:
    seen = _probe("sync_memory", _route_event(), in_lambda=True)
    assert seen["held"] is True
    assert seen["status"] == 401
    assert seen["after"] is True and seen["still"] is True
    # What the start made is frozen: no later collection scans it again
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000


def test_the_tool_function_does_the_same() -> None:
    seen = _probe("tool_invoke", {"tool": "memory_read"}, in_lambda=True)
    assert seen["held"] is True
    assert seen["status"] == "parameter_missing"
    assert seen["after"] is True and seen["still"] is True
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000


@pytest.mark.parametrize("function", ["sync_memory", "tool_invoke"])
def test_outside_lambda_the_collector_is_left_as_it_is(function: str) -> None:
    # The local gateway and the tests load every handler in one long-lived process: nothing is paused there
    event: dict[str, object] = _route_event() if function == "sync_memory" else {"tool": "memory_read"}
    seen = _probe(function, event, in_lambda=False)
    assert seen == {"held": False, "status": seen["status"], "after": True, "frozen": 0, "still": True}
