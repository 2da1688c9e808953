"""Cold-start measurements for `make bench`: what a fresh Lambda container pays before and at its first call.

- `import_table`: for each function, the whole-process wall time of `python -c "import app"` run as Lambda
  runs it (the function's folder as the working directory, the layer on PYTHONPATH), median of 7 fresh
  processes, beside a bare `python -c "import boto3"` measured in the same run (interleaved with the routes,
  so a machine's load moves both alike). The ratio is what docs/decisions.md's target (at most 1.3x) reads.
- `first_call`: one fresh process per verb imports the function's app, builds the AWS clients, answers the
  verb's event once and then a second event (the warm figure), and reports each phase.

Not a pytest module; `tests/unit/test_route_imports.py` checks what the imports load.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"
RUNS = 7

_IMPORT = "import time; t = time.perf_counter(); import app; print((time.perf_counter() - t) * 1e3)"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "shared"), "PYTHONDONTWRITEBYTECODE": "1"}


def _timed(args: list[str], cwd: Path) -> tuple[float, str]:
    """A process's whole wall time in ms (start-up, imports, exit) and what it printed."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - start) * 1e3
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} in {cwd}: {done.stderr[-1000:]}")
    return wall, done.stdout


@dataclass
class ImportRow:
    function: str
    process_ms: float  # median whole-process wall time
    import_ms: float  # median time of `import app` inside the process

    def ratio(self, boto3_ms: float) -> float:
        return self.process_ms / boto3_ms


def functions() -> list[str]:
    return sorted(p.name for p in FUNCTIONS.iterdir() if (p / "app.py").exists())


def import_table(names: list[str], runs: int = RUNS) -> tuple[float, list[ImportRow]]:
    """(bare `import boto3` process ms, one row per function), medians of `runs` fresh processes each.

    Sequential, one process at a time: on a 2-core machine two at once would measure each other."""
    boto3: list[float] = []
    walls: dict[str, list[float]] = {n: [] for n in names}
    imports: dict[str, list[float]] = {n: [] for n in names}
    every = max(1, len(names) // 4)  # the baseline several times a round, spread among the routes
    for _ in range(runs):
        for k, name in enumerate(names):
            if k % every == 0:
                boto3.append(_timed([sys.executable, "-c", "import boto3"], ROOT)[0])
            wall, out = _timed([sys.executable, "-c", _IMPORT], FUNCTIONS / name)
            walls[name].append(wall)
            imports[name].append(float(out.strip().splitlines()[-1]))
    rows = [ImportRow(n, statistics.median(walls[n]), statistics.median(imports[n])) for n in names]
    return statistics.median(boto3), rows


def print_import_table(boto3_ms: float, rows: list[ImportRow], target: float) -> bool:
    print(
        f"\nCold import per function: whole process of `python -c 'import app'` in the function's folder, median "
        f"of {RUNS} fresh processes,\nbeside a bare `python -c 'import boto3'` in the same run: {boto3_ms:.1f} ms. "
        f"Target: at most {target:g}x.",
    )
    print(f"{'function':<36} {'process ms':>10} {'import ms':>9} {'x boto3':>7}  ok")
    ok = True
    for r in sorted(rows, key=lambda r: -r.process_ms):
        met = r.ratio(boto3_ms) <= target or r.function == "sweeper"
        ok &= met
        note = "" if r.function != "sweeper" else "  (scheduled job, not a route: exempt)"
        print(
            f"{r.function:<36} {r.process_ms:>10.1f} {r.import_ms:>9.1f} {r.ratio(boto3_ms):>7.2f}  "
            f"{'yes' if met else 'NO'}{note}"
        )
    return ok


# ---- the first call in a fresh process --------------------------------------------------------------

_FIRST = r"""
import json, sys, time
t0 = time.perf_counter()
import app
t1 = time.perf_counter()
from agent_memory.store import get_store
get_store()
t2 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "clients_ms": (t2 - t1) * 1e3}), flush=True)
for line in sys.stdin:
    event = json.loads(line)
    s, c = time.perf_counter(), time.process_time()
    out = app.handler(event, None)
    took = ((time.perf_counter() - s) * 1e3, (time.process_time() - c) * 1e3)
    modules = sum(1 for m in sys.modules if m.startswith("agent_memory"))
    print(json.dumps({"ms": took[0], "cpu_ms": took[1], "out": out, "modules": modules}), flush=True)
"""


@dataclass
class FirstCall:
    verb: str
    function: str
    import_ms: float
    clients_ms: float
    first_ms: float
    first_cpu_ms: float
    second_ms: float
    modules: int

    @property
    def total_ms(self) -> float:
        return self.import_ms + self.clients_ms + self.first_ms


class FreshProcess:
    """A fresh interpreter that imports one function's app.py and answers events one at a time."""

    def __init__(self, function: str) -> None:
        self.function = function
        self.child = subprocess.Popen(
            [sys.executable, "-c", _FIRST],
            cwd=FUNCTIONS / function,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.started = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.child.stdout is not None
        line = self.child.stdout.readline()
        if not line:
            self.child.wait()
            raise RuntimeError(f"the fresh process of {self.function} stopped (exit {self.child.returncode})")
        got: dict[str, Any] = json.loads(line)
        return got

    def call(self, event: dict[str, Any]) -> dict[str, Any]:
        assert self.child.stdin is not None
        self.child.stdin.write(json.dumps(event) + "\n")
        self.child.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(timeout=30)


def print_first_calls(rows: list[FirstCall], warm_p50: dict[str, float]) -> None:
    print(
        "\nFirst request in a fresh process, per verb (ms): import = `import app`; clients = boto3's import, the "
        "store and its two clients;\nfirst = the first call (its request model, services and first AWS "
        "connections included); second = the next call in the same process;\nwarm p50 = the table above's "
        "total p50. modules = agent_memory modules loaded after the two calls."
    )
    print(
        f"{'verb':<24} {'function':<34} {'import':>7} {'clients':>8} {'first':>7} {'1st cpu':>8} {'cold sum':>8} "
        f"{'second':>7} {'warm p50':>8} {'modules':>7}"
    )
    for r in rows:
        warm = warm_p50.get(r.verb)
        print(
            f"{r.verb:<24} {r.function:<34} {r.import_ms:>7.1f} {r.clients_ms:>8.1f} {r.first_ms:>7.1f} "
            f"{r.first_cpu_ms:>8.1f} {r.total_ms:>8.1f} {r.second_ms:>7.1f} "
            f"{'-' if warm is None else f'{warm:.2f}':>8} {r.modules:>7}"
        )
