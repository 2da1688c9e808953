"""`agent-memory serve --data-dir` survives SIGKILL: nothing it acknowledged is lost, nothing half-applied.

A real server process runs on a data folder; six workers (tests/workload.py) write into it; the server is
killed with SIGKILL while they are mid-flight, restarted on the same folder, loaded again, killed again and
restarted; then everything acknowledged in both rounds must be there, and nothing nobody sent. The journal
is compacted every few hundred KiB here, so a restart loads a snapshot and replays a journal after it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..support import Api
from ..workload import Acks, Worker, World, all_acks, build_world, start, verify

pytestmark = pytest.mark.http

WORKERS = 6
KILL_AFTER = 250  # acknowledgements in a round before the kill: the workers are in full flow by then
STARTUP_SECONDS = 60.0
ROUND_SECONDS = 60.0


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    operator_key: str
    data_dir: str
    stderr: Path

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


class Servers:
    """Starts `agent-memory serve` processes; whatever is still running is killed at teardown."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        # Only what this test chooses: the session's own service sets AWS_ENDPOINT_URL (which would put the
        # child on the session's ephemeral moto) and AGENT_MEMORY_OPERATOR_KEY (which would hide whether the
        # key really comes back from the folder).
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_") and k != "AWS_ENDPOINT_URL"}
        env.update(
            AGENT_MEMORY_WRITES_PER_MINUTE="off",
            AGENT_MEMORY_ACCOUNT_WRITES_PER_MINUTE="off",
            AGENT_MEMORY_ORIGIN_WRITES_PER_MINUTE="off",
            AGENT_MEMORY_JOURNAL_COMPACT_BYTES="262144",
        )
        return env

    def spawn(self, data_dir: Path, name: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
        out, err = self.tmp / f"{name}.out", self.tmp / f"{name}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent_memory_sdk.local.cli",
                    "serve",
                    "--port",
                    "0",
                    "--data-dir",
                    str(data_dir),
                ],
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                env=self.env(),
            )
        self.started.append(process)
        return process, out, err

    def start(self, data_dir: Path, name: str) -> Server:
        """A server on `data_dir`, once it printed its ready line."""
        process, out, err = self.spawn(data_dir, name)
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            line = out.read_text().partition("\n")
            if line[1]:
                info = json.loads(line[0])
                assert info["data_dir"] == str(data_dir), info
                return Server(process, info["url"], info["operator_key"], info["data_dir"], err)
            if process.poll() is not None:
                pytest.fail(f"the server exited {process.returncode} before it was ready: {err.read_text()[-2000:]}")
            time.sleep(0.05)
        pytest.fail(f"the server printed no ready line in {STARTUP_SECONDS:.0f} s: {err.read_text()[-2000:]}")

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    made = Servers(tmp_path)
    try:
        yield made
    finally:
        made.close()


def load_until_killed(server: Server, workers: list[Worker]) -> dict[str, Any]:
    """Run the workers until KILL_AFTER acknowledgements, SIGKILL the server under them, and let each stop
    at its first request that gets no answer. Answers what the moment of the kill looked like."""
    stop = threading.Event()
    running = start(workers, stop)
    try:
        deadline = time.monotonic() + ROUND_SECONDS
        while sum(w.acknowledged for w in workers) < KILL_AFTER:
            assert time.monotonic() < deadline, f"{sum(w.acknowledged for w in workers)} acks in {ROUND_SECONDS} s"
            if not any(t.is_alive() for t in running):
                # Each stops at its first unanswered request: the server went away before it was killed.
                errors = [w.error for w in workers]
                pytest.fail(f"the workers stopped before the kill ({errors}): {server.stderr.read_text()[-2000:]}")
            time.sleep(0.002)
        in_flight = sum(w.in_flight for w in workers)
        server.kill()
    finally:
        # The requests in flight at the kill get no answer (unknown); no worker starts another operation.
        stop.set()
        for t in running:
            t.join(timeout=30)
    assert not any(t.is_alive() for t in running)
    for w in workers:
        if w.error is not None:
            raise w.error
    # Before the kill every answer was one the mix expects: no 5xx, no refusal it does not explain.
    assert [s for w in workers for s in w.surprises] == []
    return {"in_flight": in_flight, "unknown": sum(sum(w.unknown.values()) for w in workers)}


def journal_state(data_dir: Path) -> tuple[int, int]:
    """(the newest snapshot's generation, bytes of journal after it): see agent_memory_sdk.local.durable."""
    snaps = sorted(int(p.name.split("-")[1].split(".")[0]) for p in data_dir.glob("state-*.snap"))
    generation = snaps[-1] if snaps else 0
    journal = data_dir / f"journal-{generation}.log"
    return generation, journal.stat().st_size if journal.exists() else 0


def still_works(server: Server, world: World, name: str) -> None:
    """The same operator key and the token handed out before the crash still open the service."""
    api = Api(server.url, server.operator_key)
    try:
        assert api.show_conversation(world.who, world.ws, world.shared_conv)["public_id"] == world.shared_conv
        r = api.get(f"/memories/{world.memory_id}", world.who)
        assert r.status_code == 200, r.text
        api.account(name=name, human="eve")
    finally:
        api.http.close()


def test_a_sigkilled_server_keeps_every_acknowledged_write_across_two_crashes(servers: Servers, tmp_path: Path) -> None:
    data_dir = tmp_path.resolve() / "data"  # as the server prints and names it
    server = servers.start(data_dir, "first")
    key = server.operator_key
    world = build_world(server.url, key, seed=7)
    acks = Acks()
    kills = []
    for round_ in (1, 2):
        # When the workers are mid-load and the server is SIGKILLed
        workers = [Worker(world, i, seed=round_, stop_on_transport_error=True) for i in range(WORKERS)]
        kill = load_until_killed(server, workers)
        acks.extend(all_acks(workers))
        generation, journal_bytes = journal_state(data_dir)
        assert generation >= 1, "no snapshot was written: the restart would not load one"
        kills.append({**kill, "generation": generation, "journal_bytes": journal_bytes})

        # Then a restart on the same folder answers with the same operator key, and the old token still works
        server = servers.start(data_dir, f"restart-{round_}")
        assert server.operator_key == key
        world.url = server.url
        still_works(server, world, f"after-crash-{round_}")

        # And after the first crash, everything acknowledged so far reads back (nothing is changed by looking)
        if round_ == 1:
            api = Api(server.url, key)
            try:
                verdict = verify(world, acks, api, fill_cap=False)
            finally:
                api.http.close()
            assert verdict.ok, str(verdict)

    # And after the second, everything acknowledged in both rounds is there, nothing else is, and the
    # capped conversation fills up at exactly its cap
    api = Api(server.url, key)
    try:
        verdict = verify(world, acks, api)
    finally:
        api.http.close()
    assert verdict.ok, str(verdict)
    # (what the run exercised, for whoever reads a failure or tunes the test)
    assert acks.count() >= 2 * KILL_AFTER
    assert verdict.checked["memory versions"] > 0 and verdict.checked["forks"] > 0
    assert verdict.checked["records"] > 0 and verdict.checked["creates"] > 0
    print(f"kills {kills}, acks {acks.count()}, unknown {acks.unknown()}, checked {dict(verdict.checked)}")


def test_a_second_server_on_a_folder_in_use_is_refused(servers: Servers, tmp_path: Path) -> None:
    # Given a server running on a folder, with something in it
    data_dir = tmp_path.resolve() / "data"
    first = servers.start(data_dir, "first")
    api = Api(first.url, first.operator_key)
    who = api.account()

    # When a second server is started on the same folder
    second, _, err = servers.spawn(data_dir, "second")
    try:
        code = second.wait(timeout=STARTUP_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail("a second server on a folder in use kept running")

    # Then it exits non-zero, saying which folder is in use
    message = err.read_text()
    assert code != 0
    assert str(data_dir) in message and "in use" in message, message
    # And the first server is untouched by the attempt
    assert api.get("/memories", who).status_code == 200
    api.http.close()
