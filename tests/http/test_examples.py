"""The examples run against the local gateway, so they cannot rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_memory_sdk.local.runtime import LocalService

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_scripted_agent_loop_runs_end_to_end(fresh: LocalService) -> None:
    # When the example runs against the service, as it would against `make run`
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_loop.py"), "--url", fresh.url, "--operator-key", fresh.operator_key],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # Then it showed the block and offered the tools
    assert '<memory_block boundary="' in out and "The team ships on Fridays." in out
    assert (
        "memory_ls, memory_read, memory_write, memory_edit, memory_delete, memory_history, memory_append, "
        "memory_search, skill"
    ) in out
    # And the stale edit was refused, then redone after a fresh read, keeping the other writer's line
    stale = out.index("memory_edit(")
    assert "refused stale_object" in out[stale:]
    assert out.index("memory_read(", stale) < out.rindex("memory_edit(")
    assert "- outline the talk (done)\n- book the venue (ada)\ncontext_revision 3" in out
    # And the fork went its own way without touching the parent
    assert "- try a shorter talk (fork only)" in out and "parent's plan unchanged: True" in out


def test_the_example_says_what_it_needs_without_an_operator_key() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_loop.py"), "--url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2 and "operator-key" in done.stderr
