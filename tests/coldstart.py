"""Cold-start measurements for `make bench`: what a fresh Lambda container pays before and at its first call.

- `end_to_end`: for each function, the whole-process wall time from start to its first answer: a fresh
  `python` in the function's folder (the layer on PYTHONPATH, its bytecode compiled as shared/Makefile ships
  it) imports `app` and answers one successful call (tests/coldcases.py) against the local storage, beside a
  bare `python -c "import boto3"` measured in the same run (interleaved with the routes, so a machine's load
  moves both alike). The ratio is what docs/decisions.md's target (at most 2.0x) reads.
- `first_call`: one fresh process per verb imports the function's app, answers the verb's event once (its
  clients, request model and first connections included) and then a second event (the warm figure).

Not a pytest module; `tests/unit/test_route_imports.py` checks what the imports load and keeps the budget.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"


def _env(function: str | None = None) -> dict[str, str]:
    """This environment, plus the functions' literal Globals variables from template.yaml where it has not
    set them (e.g. PYDANTIC_DISABLE_PLUGINS), and the function's name as Lambda sets it: a fresh process
    runs as a deployed function would."""
    named = {"AWS_LAMBDA_FUNCTION_NAME": function} if function else {}
    return {
        **_template_env(),
        **os.environ,
        **named,
        "PYTHONPATH": str(ROOT / "shared"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@cache
def _template_env() -> dict[str, str]:
    from agent_memory_sdk.local.template import load_template

    variables = load_template(ROOT / "template.yaml")["Globals"]["Function"]["Environment"]["Variables"]
    return {k: v for k, v in variables.items() if isinstance(v, str)}


def compile_layer() -> None:
    """Bytecode for the layer's package, as shared/Makefile ships it (compileall): each fresh process then
    reads it, as a deployed function does, instead of compiling every module it imports."""
    import compileall

    compileall.compile_dir(str(ROOT / "shared" / "agent_memory"), quiet=1)


# What a measured process prints when it has answered (its logs and metrics may print before it).
ANSWERED = "answered: "
# A bare `import boto3`, saying when it is done: the baseline's answer.
BARE_BOTO3 = f"import boto3; print({ANSWERED!r} + '{{}}', flush=True)"


def until_answer(args: list[str], cwd: Path, env: dict[str, str], stdin: str = "") -> tuple[float, str]:
    """Process start to the line it prints when it has answered (after ANSWERED), in ms, and that line's
    text; the process is then let run to its end.

    A Lambda container answers and stays, so what its interpreter spends on exiting (tearing down every
    module and object it made) is no part of a cold start: not here, and not in the baseline."""
    start = time.perf_counter()
    child = subprocess.Popen(
        args, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(stdin)
    child.stdin.close()
    took, said = 0.0, ""
    for line in child.stdout:
        if line.startswith(ANSWERED):
            took, said = (time.perf_counter() - start) * 1e3, line[len(ANSWERED) :]
            break
    child.stdout.read()
    err = child.stderr.read() if child.stderr is not None else ""
    if child.wait() != 0 or not said:
        raise RuntimeError(f"{' '.join(args)[:80]} in {cwd}: {err[-1500:]}")
    return took, said


def run_in(function: str, code: str, *args: str, env: dict[str, str], timeout: float = 120) -> dict[str, Any]:
    """Run `code` in a fresh interpreter in the function's folder, as Lambda starts one; the last line it
    printed, read as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=FUNCTIONS / function,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def functions() -> list[str]:
    return sorted(p.name for p in FUNCTIONS.iterdir() if (p / "app.py").exists())


# ---- the first call in a fresh process --------------------------------------------------------------

_FIRST = r"""
import json, sys, time
t0 = time.perf_counter()
import app
t1 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3}), flush=True)
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
    first_ms: float
    first_cpu_ms: float
    second_ms: float
    modules: int

    @property
    def total_ms(self) -> float:
        return self.import_ms + self.first_ms


class FreshProcess:
    """A fresh interpreter that imports one function's app.py and answers events one at a time."""

    def __init__(self, function: str) -> None:
        self.function = function
        self.child = subprocess.Popen(
            [sys.executable, "-c", _FIRST],
            cwd=FUNCTIONS / function,
            env=_env(function),
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
        "\nFirst request in a fresh process, per verb (ms): import = `import app`; first = the first call (boto3, "
        "the clients it needs, its request model, services and first AWS connections included);\nsecond = the "
        "next call in the same process; warm p50 = the table above's total p50. modules = agent_memory modules "
        "loaded after the two calls."
    )
    print(
        f"{'verb':<24} {'function':<34} {'import':>7} {'first':>7} {'1st cpu':>8} {'cold sum':>8} "
        f"{'second':>7} {'warm p50':>8} {'modules':>7}"
    )
    for r in rows:
        warm = warm_p50.get(r.verb)
        print(
            f"{r.verb:<24} {r.function:<34} {r.import_ms:>7.1f} {r.first_ms:>7.1f} "
            f"{r.first_cpu_ms:>8.1f} {r.total_ms:>8.1f} {r.second_ms:>7.1f} "
            f"{'-' if warm is None else f'{warm:.2f}':>8} {r.modules:>7}"
        )


# ---- process start to the first answer, per function ------------------------------------------------

# The child Lambda would be: import the function's app (its folder the working directory), then answer one
# event. Its own clock reports the phases; the parent times the whole process, start-up and exit included.
_END_TO_END = r"""
import json, sys, time
t0 = time.perf_counter()
import app
t1 = time.perf_counter()
out = app.handler(json.loads(sys.stdin.read()), None)
t2 = time.perf_counter()
# The tool door and the sweeper answer no HTTP status: a refusal is their error body, or a tool's is_error.
refused = isinstance(out, dict) and ("error" in out or out.get("is_error") is True)
status = out.get("statusCode", 400 if refused else 200) if isinstance(out, dict) else 200
said = {"import_ms": (t1 - t0) * 1e3, "first_ms": (t2 - t1) * 1e3, "status": status}
print(ANSWERED + json.dumps(said), flush=True)
""".replace("ANSWERED", repr(ANSWERED))


@dataclass
class EndToEnd:
    function: str
    runs: int
    process_ms: float  # median process start to its answer (start-up, import, first call; not its exit)
    import_ms: float  # median `import app` inside the process
    first_ms: float  # median first call (clients, request model, AWS round trips)
    statuses: list[int]  # every run's status
    expected: set[int]  # the function's success (tests/coldcases.py)

    def ratio(self, boto3_ms: float) -> float:
        return self.process_ms / boto3_ms

    @property
    def succeeded(self) -> bool:
        """Every run answered the function's success: a refusal would not have paid a first call's work."""
        return set(self.statuses) <= self.expected


def end_to_end(
    events: dict[str, Callable[[], dict[str, Any]]],
    expected: dict[str, set[int]],
    runs: dict[str, int],
    report: Any = None,
) -> tuple[float, list[EndToEnd]]:
    """(bare `import boto3` process ms, one row per function): each function's fresh process answering an
    event of its own (`events[name]()` makes the next one, before the process starts), `runs[name]` times,
    interleaved with the bare baseline so a machine's load moves both alike.

    Sequential, one process at a time: on a 2-core machine two at once would measure each other."""
    names = sorted(events)
    boto3: list[float] = []
    walls: dict[str, list[float]] = {n: [] for n in names}
    inner: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    every = max(1, len(names) // 8)  # the baseline several times a round, spread among the routes
    for round_ in range(max(runs.values())):
        todo = [n for n in names if runs[n] > round_]
        for k, name in enumerate(todo):
            if k % every == 0:
                boto3.append(until_answer([sys.executable, "-c", BARE_BOTO3], ROOT, _env())[0])
            event = json.dumps(events[name]())
            took, line = until_answer([sys.executable, "-c", _END_TO_END], FUNCTIONS / name, _env(name), event)
            walls[name].append(took)
            inner[name].append(json.loads(line))
        if report is not None:
            report(f"cold start end to end: round {round_ + 1} ({len(todo)} functions)")
    rows = [
        EndToEnd(
            n,
            len(walls[n]),
            statistics.median(walls[n]),
            statistics.median(x["import_ms"] for x in inner[n]),
            statistics.median(x["first_ms"] for x in inner[n]),
            [int(x["status"]) for x in inner[n]],
            expected[n],
        )
        for n in names
    ]
    return statistics.median(boto3), rows


def print_end_to_end(boto3_ms: float, rows: list[EndToEnd], target: float) -> bool:
    print(
        "\nCold start end to end per function: a fresh process imports the function's app and answers one event "
        f"(median of the runs shown),\nbeside a bare `python -c 'import boto3'` in the same run: {boto3_ms:.1f} ms. "
        f"Target: at most {target:g}x."
    )
    print(f"{'function':<36} {'runs':>4} {'process':>8} {'import':>7} {'first':>7} {'status':>6} {'x boto3':>7}  ok")
    ok = True
    for r in sorted(rows, key=lambda r: -r.process_ms):
        met = (r.ratio(boto3_ms) <= target or r.function == "sweeper") and r.succeeded
        ok &= met
        # A run that did not answer the function's success measured less than a first call: flagged, and the
        # table's target fails with it.
        verdict = "yes" if met else "NO" if r.succeeded else f"NO: answered {sorted(set(r.statuses))}"
        print(
            f"{r.function:<36} {r.runs:>4} {r.process_ms:>8.1f} {r.import_ms:>7.1f} {r.first_ms:>7.1f} "
            f"{r.statuses[0]:>6} {r.ratio(boto3_ms):>7.2f}  {verdict}"
        )
    return ok
