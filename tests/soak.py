"""The soak run: one `agent-memory serve` process, as a user runs it, under a long mixed write load.

Not a pytest module. `python -m tests.soak [--writes 100000] [--clients 8]` starts the server in a child
process on a data folder of its own (durable, as `make run` is), builds the workload's world
(tests/workload.py) and drives `--clients` workers through the local gateway: conversation writes, forks,
Memory file writes, record appends and creates, each worker deleting again what it made once it holds a
few (so the data set stays about the same size and what grows is the server, not the data). The
server's resident memory (VmRSS) is sampled every few seconds against the accepted writes so far.

What deletes leave (a deleted fork's rows, content objects nothing points at any more) goes at the next
sweep, hourly in AWS. The soak compresses a long-running server's days into minutes, so it sweeps every
`--sweep-every` accepted writes (default 5,000: about every minute and a half here) with the 60-second
grace, the clients holding off while it runs (see `run_soak`).

Rate limits are off: the soak measures the server's memory, and 8 clients of one account would otherwise
spend most of the run waiting out the shipped per-account budget.

Goal (issue 24): at most 1 GiB after 100,000 accepted writes, and flat after warm-up: the growth over the
second half of the run is judged against the first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .workload import Worker, build_world

RSS_GOAL_MB = 1024.0
# After warm-up, the second half of the run may add at most this share of the RSS the first half ended at.
FLAT_GOAL = 0.10
WARMUP_SHARE = 0.2  # the first fifth of the writes is warm-up: caches, pools and the first snapshot fill
# Below this many writes the shared documents' histories are still filling towards their retention, so
# growth is the data's, not the server's: a shorter run (make bench --quick) judges the ceiling only.
FLAT_MIN_WRITES = 20_000
SWEEP_GRACE_SECONDS = 60
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Sample:
    seconds: float
    writes: int
    rss_mb: float


@dataclass
class SoakReport:
    clients: int
    writes: int
    seconds: float
    samples: list[Sample]
    sweeps: int
    sweep_every: int
    unexpected: int
    unknown: int
    surprises: list[str] = field(default_factory=list)

    @property
    def peak_mb(self) -> float:
        return max((s.rss_mb for s in self.samples), default=0.0)

    @property
    def final_mb(self) -> float:
        return self.samples[-1].rss_mb if self.samples else 0.0

    def at(self, writes: float) -> float:
        """The RSS sampled nearest after `writes` accepted writes."""
        for s in self.samples:
            if s.writes >= writes:
                return s.rss_mb
        return self.final_mb

    @property
    def growth(self) -> float:
        """The second half's growth as a share of the RSS at the end of warm-up-to-half."""
        half = self.at(self.writes / 2)
        return (self.final_mb - half) / half if half else 0.0

    @property
    def flat_judged(self) -> bool:
        return self.writes >= FLAT_MIN_WRITES

    @property
    def ok(self) -> bool:
        flat = self.growth <= FLAT_GOAL or not self.flat_judged
        return self.final_mb <= RSS_GOAL_MB and self.peak_mb <= RSS_GOAL_MB and flat and self.unexpected == 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["samples"] = [[round(s.seconds, 1), s.writes, round(s.rss_mb, 1)] for s in self.samples]
        data.update(
            peak_mb=round(self.peak_mb, 1),
            final_mb=round(self.final_mb, 1),
            warm_mb=round(self.at(self.writes * WARMUP_SHARE), 1),
            half_mb=round(self.at(self.writes / 2), 1),
            growth=round(self.growth, 3),
            flat_judged=self.flat_judged,
            goal_mb=RSS_GOAL_MB,
            flat_goal=FLAT_GOAL,
            ok=self.ok,
            writes_per_second=round(self.writes / self.seconds, 1) if self.seconds else 0.0,
        )
        return data


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextmanager
def server(data_dir: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, Any]]]:
    """`agent-memory serve` in a child process on `data_dir`, as a user starts it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AGENT_MEMORY_"))}
    env.update({f"AGENT_MEMORY_{b}WRITES_PER_MINUTE": "off" for b in ("", "ACCOUNT_", "ORIGIN_")})
    env["PYTHONUNBUFFERED"] = "1"
    child = subprocess.Popen(
        [sys.executable, "-m", "agent_memory_sdk.local.cli", "serve", "--port", "0", "--data-dir", str(data_dir)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"the server exited with {child.wait()} before it was ready")
        yield child, json.loads(line)
    finally:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def sweep(storage_url: str) -> None:
    """One sweep of the server's storage, as the hourly schedule runs it in AWS."""
    env = {**os.environ, "AWS_ENDPOINT_URL": storage_url, "TABLE_NAME": "agent-memory"}
    env["BUCKET_NAME"] = "agent-memory-content"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_memory_sdk.local.cli",
            "sweep",
            "--grace-seconds",
            str(SWEEP_GRACE_SECONDS),
            "--settle-seconds",
            "1",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def run_soak(
    writes: int,
    clients: int = 8,
    sample_seconds: float = 3.0,
    sweep_every: int = 5_000,
    seed: int = 24,
    report: Callable[[str], None] = print,
) -> SoakReport:
    with tempfile.TemporaryDirectory(prefix="agent-memory-soak-") as folder, server(Path(folder)) as (child, info):
        world = build_world(info["url"], info["operator_key"], seed, max_workers=clients)
        workers = [Worker(world, i, seed, keep_acks=False, recycle=True) for i in range(clients)]
        stop, pause = threading.Event(), threading.Event()
        pause.set()
        threads = [threading.Thread(target=w.run, args=(stop, pause), name=f"soak-{w.index}") for w in workers]
        started = time.monotonic()
        samples = [Sample(0.0, 0, rss_mb(child.pid))]
        for t in threads:
            t.start()
        sweeps, next_sweep, next_line = 0, sweep_every, 0
        try:
            while True:
                time.sleep(sample_seconds)
                done = sum(w.acknowledged for w in workers)
                samples.append(Sample(time.monotonic() - started, done, rss_mb(child.pid)))
                if done >= next_line:
                    report(f"soak: {done:,} writes, RSS {samples[-1].rss_mb:.0f} MiB")
                    next_line = done + max(1, writes // 10)
                if any(w.error for w in workers) or child.poll() is not None:
                    break
                if done >= writes:
                    break
                if done >= next_sweep:
                    # In a quiet moment, as an hourly sweep mostly finds one: the sweep deletes a deleted
                    # fork's rows one request at a time, and against eight clients at full speed on one
                    # process it falls behind what they make.
                    pause.clear()
                    time.sleep(0.5)
                    sweep(info["storage_url"])
                    pause.set()
                    sweeps += 1
                    next_sweep += sweep_every
        finally:
            stop.set()
            pause.set()
            for t in threads:
                t.join()
        for w in workers:
            if w.error is not None:
                raise RuntimeError(f"soak worker {w.index} failed") from w.error
        if child.poll() is not None:
            raise RuntimeError(f"the server exited with {child.returncode} during the soak")
        samples.append(Sample(time.monotonic() - started, sum(w.acknowledged for w in workers), rss_mb(child.pid)))
        return SoakReport(
            clients=clients,
            writes=samples[-1].writes,
            seconds=samples[-1].seconds,
            samples=samples,
            sweeps=sweeps,
            sweep_every=sweep_every,
            unexpected=sum(sum(w.unexpected.values()) for w in workers),
            unknown=sum(sum(w.unknown.values()) for w in workers),
            surprises=[s for w in workers for s in w.surprises][:10],
        )


QUICK_WRITES = 1_500
FULL_WRITES = 100_000


def bench_soak(quick: bool, report: Callable[[str], None]) -> dict[str, Any]:
    """The soak's figures for `make bench` (a short one with --quick)."""
    writes = QUICK_WRITES if quick else FULL_WRITES
    result = run_soak(writes, report=report, sweep_every=min(5_000, max(500, writes // 3)))
    data = result.to_dict()
    flat = f"+{FLAT_GOAL:.0%}" if result.flat_judged else f"flatness judged from {FLAT_MIN_WRITES:,} writes"
    report(
        f"soak: {result.writes:,} writes in {result.seconds:.0f} s; RSS peak {result.peak_mb:.0f} MiB, "
        f"final {result.final_mb:.0f} MiB, second half +{result.growth:.1%} "
        f"({'yes' if result.ok else 'NO'}: at most {RSS_GOAL_MB:.0f} MiB, {flat})"
    )
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=FULL_WRITES, help="accepted writes to reach (default 100000)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent workers (default 8)")
    parser.add_argument("--sample-seconds", type=float, default=3.0, help="seconds between RSS samples")
    parser.add_argument("--sweep-every", type=int, default=5_000, help="accepted writes between sweeps")
    parser.add_argument("--json", metavar="FILE", help="also write the report's data here")
    args = parser.parse_args(argv)
    result = run_soak(args.writes, args.clients, args.sample_seconds, args.sweep_every)
    data = result.to_dict()
    print(json.dumps({k: v for k, v in data.items() if k != "samples"}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(data) + "\n")
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
