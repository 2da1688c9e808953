"""A load run through the local gateway: concurrent clients, a seeded mix of verbs, then the invariants.

Not a pytest module (the name keeps it out of collection); `tests/http/test_load_invariants.py` runs a
small one, and `python -m tests.loadrun [--clients N --seconds S]` a full one on a service of its own.

`run_load(url)` builds its own world over HTTP on a running service (an account, one Human per client,
a workspace, a shared conversation and a capped one), then runs up to 32 client threads until `seconds`
have passed or `max_requests` were sent, whichever comes first. Each thread draws from a seeded mix:

- show / list: reads of the shared documents (a write's own read counts as a show) and of the shared
  conversation's listing;
- write: a conditional write on one of a few shared documents (show it, write with the pair it read),
  so writers race; `409 stale_object` is the contract's answer to a loser and is expected;
- fork: a copy-on-write fork of the shared conversation while the writes go on;
- block: the shared conversation's memory block;
- create: a new document in the capped conversation, which starts a few documents below the
  per-conversation cap, so creators race for the last places; `422 memory_full` is expected past it.

Every write carries a marker of its own, so afterwards each document's version history can be held
against the writes the service accepted (`check_history`, a pure function): every accepted write must be
in it at the version the service answered, with the content written, and nothing else may be. The capped
conversation must hold exactly the cap, every refused create must carry the cap's code, no response may
be a 5xx and no 4xx may be one the mix does not expect.

The figures are the local harness's: the clients, the gateway, every handler and (with `--storage
thread`) moto share one process and its GIL, so they rank changes against each other, not against AWS.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import requests
from agent_memory.core.ids import sha256_hex
from agent_memory.core.model import DEFAULT_VERSIONS_KEPT, MAX_DOCUMENTS_PER_ANCHOR

from .support import Api, Who, conv_base, pct

MAX_CLIENTS = 32
KINDS = ("show", "list", "write", "fork", "block", "create")
# The mix as a deck each client shuffles (seeded) and plays through, again and again: exact proportions
# in every 18 operations, so even a short run does each kind. A write is two requests (its read, then
# the write); forks are the heaviest request (a put per copied document), so they are rare.
MIX: dict[str, int] = {"show": 4, "list": 2, "write": 6, "fork": 1, "block": 2, "create": 3}
SHARED_DOCUMENTS = 4
STALE = "stale_object"  # the contract's refusal of a write whose pair moved (seed 000, 409)
CAP_CODE = "memory_full"  # the contract's refusal of the 65th document under one anchor (seed 000, 422)
CAP = MAX_DOCUMENTS_PER_ANCHOR
ABSENT = "memory_not_found"
# Forks whose copies are compared with the accepted writes afterwards (each costs one listing).
FORK_SAMPLES = 8
EXAMPLES_KEPT = 10

Status = tuple[int, str | None]  # (HTTP status or 0 for no answer, error code)


def sha256(text: str) -> str:
    return sha256_hex(text.encode("utf-8"))


# ---- the invariant checker (pure) ------------------------------------------------------------------


@dataclass(frozen=True)
class AcceptedWrite:
    """A write the service answered 2xx, with the pair it named in that answer."""

    path: str
    public_id: str
    lock_version: int
    content: str

    @property
    def content_sha256(self) -> str:
        return sha256(self.content)


@dataclass(frozen=True)
class HistoryVersion:
    """One row of a document's version history; `content` when its text was read too."""

    public_id: str
    lock_version: int
    content_sha256: str
    content: str | None = None

    def carries(self, write: AcceptedWrite) -> bool:
        if self.content_sha256 != write.content_sha256:
            return False
        return self.content is None or self.content == write.content


@dataclass(frozen=True)
class HistoryCheck:
    lost_updates: int = 0
    out_of_order: int = 0
    unexplained_versions: int = 0
    # Accepted writes older than the oldest version a full history keeps: nothing can prove them either way.
    unverified_writes: int = 0
    problems: tuple[str, ...] = ()

    def __add__(self, other: HistoryCheck) -> HistoryCheck:
        return HistoryCheck(
            self.lost_updates + other.lost_updates,
            self.out_of_order + other.out_of_order,
            self.unexplained_versions + other.unexplained_versions,
            self.unverified_writes + other.unverified_writes,
            self.problems + other.problems,
        )


def check_history(
    accepted: Sequence[AcceptedWrite],
    history: Sequence[HistoryVersion],
    *,
    versions_kept: int = DEFAULT_VERSIONS_KEPT,
    sent: Collection[str] = (),
) -> HistoryCheck:
    """Hold one document's history (as listed: newest first) against the writes accepted on it.

    - lost: an accepted write whose content is in no version;
    - out of order: one whose content is in the history but not at the pair the service answered (so
      the history's order is not the order the writers were told), or a listing not strictly newest first;
    - unexplained: a version carrying no accepted write's content, or listed twice. `sent` holds the
      content hashes of writes that got no answer (a crash test's): a version may carry one of those.
    A write below the oldest kept version of a history holding `versions_kept` versions was pruned by
    design, so it is counted as unverified rather than lost.
    """
    problems: list[str] = []
    by_pair = {(h.public_id, h.lock_version): h for h in history}
    oldest: dict[str, int] = {}
    held: Counter[str] = Counter()
    for h in history:
        oldest[h.public_id] = min(oldest.get(h.public_id, h.lock_version), h.lock_version)
        held[h.public_id] += 1
    lost = misplaced = unverified = 0
    for w in accepted:
        at = by_pair.get((w.public_id, w.lock_version))
        if at is not None and at.carries(w):
            continue
        landed = [h for h in history if h.carries(w)]
        if landed:
            misplaced += 1
            where = ", ".join(f"{h.lock_version}" for h in landed)
            problems.append(f"a write told v{w.lock_version} is at v{where}")
        elif held[w.public_id] >= versions_kept and w.lock_version < oldest[w.public_id]:
            unverified += 1
        else:
            lost += 1
            problems.append(f"accepted v{w.lock_version} ({w.content_sha256[:12]}) is not in the history")
    for newer, older in itertools.pairwise(history):
        if newer.public_id == older.public_id and newer.lock_version <= older.lock_version:
            misplaced += 1
            problems.append(f"history lists v{newer.lock_version} before v{older.lock_version}")
    unexplained = 0
    seen: set[tuple[str, int]] = set()
    for h in history:
        pair = (h.public_id, h.lock_version)
        if pair in seen or not (h.content_sha256 in sent or any(h.carries(w) for w in accepted)):
            unexplained += 1
            problems.append(f"v{h.lock_version} ({h.content_sha256[:12]}) matches no accepted write")
        seen.add(pair)
    return HistoryCheck(lost, misplaced, unexplained, unverified, tuple(problems))


def premature_refusals(refused: Sequence[tuple[float, float]], accepted: Sequence[tuple[float, float]]) -> int:
    """Cap refusals answered before an accepted create was even sent: documents are never deleted here,
    so there was still room when such a refusal was given. Each span is (sent, answered)."""
    if not accepted:
        return 0
    last_sent = max(sent for sent, _ in accepted)
    return sum(1 for _, answered in refused if answered < last_sent)


# ---- the report -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KindStats:
    count: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    statuses: dict[str, int]


@dataclass(frozen=True)
class Invariants:
    lost_updates: int
    out_of_order: int
    unexplained_versions: int
    cap_expected: int
    cap_actual: int
    cap_refusals_wrong_code: int
    five_xx: int
    unexpected_4xx: int
    # What the figures above are out of, and the rarer ways a run can go wrong.
    accepted_writes: int = 0
    shared_documents: int = 0  # the paths the shared writes went to, rotations included
    stale_refusals: int = 0
    unverified_writes: int = 0
    cap_accepted: int = 0
    cap_refusals: int = 0
    cap_premature_refusals: int = 0
    fork_copies_unexplained: int = 0
    transport_errors: int = 0

    def failures(self) -> list[str]:
        out = [
            name
            for name in (
                "lost_updates",
                "out_of_order",
                "unexplained_versions",
                "cap_refusals_wrong_code",
                "cap_premature_refusals",
                "five_xx",
                "unexpected_4xx",
                "fork_copies_unexplained",
                "transport_errors",
            )
            if getattr(self, name)
        ]
        if self.cap_actual != self.cap_expected:
            out.append("cap_actual")
        if self.cap_accepted != self.cap_actual:
            out.append("cap_accepted")
        return out

    @property
    def ok(self) -> bool:
        return not self.failures()


@dataclass(frozen=True)
class LoadReport:
    clients: int
    seconds: float
    requests: int
    throughput_rps: float
    kinds: dict[str, KindStats]
    p50_ms: float
    p95_ms: float
    p99_ms: float
    statuses: dict[str, int]
    invariants: Invariants
    seed: int = 0
    max_requests: int = 0
    stopped_by: Literal["seconds", "max_requests", "both"] = "seconds"
    setup_seconds: float = 0.0
    verify_seconds: float = 0.0
    # The first few unexpected answers and history problems, for whoever reads a failed run.
    examples: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.invariants.ok

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["examples"] = list(self.examples)
        out["invariants"]["ok"] = self.invariants.ok
        out["invariants"]["failures"] = self.invariants.failures()
        out["ok"] = self.ok
        return out


# ---- the run ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    kind: str
    status: int
    code: str | None
    sent: float  # perf_counter seconds
    answered: float
    expected: bool
    note: str = ""

    @property
    def ms(self) -> float:
        return (self.answered - self.sent) * 1000

    @property
    def key(self) -> str:
        if self.status == 0:
            return f"error {self.code}"
        return str(self.status) if self.code is None else f"{self.status} {self.code}"


class Budget:
    """The run's bounds, shared by every client: a request is sent only while both hold."""

    def __init__(self, seconds: float, max_requests: int) -> None:
        self.seconds = seconds
        self.started = time.perf_counter()
        self.deadline = self.started + seconds
        self.max_requests = max_requests
        self.sent = 0
        self.hit_time = self.hit_count = False
        self._lock = threading.Lock()

    def start(self) -> None:
        self.started = time.perf_counter()
        self.deadline = self.started + self.seconds

    def stop(self) -> None:
        self.deadline = 0.0

    def take(self) -> bool:
        with self._lock:
            if time.perf_counter() >= self.deadline:
                self.hit_time = True
                return False
            if self.sent >= self.max_requests:
                self.hit_count = True
                return False
            self.sent += 1
            return True


class SharedDocuments:
    """The few documents every writer races on.

    A document's history keeps its last `versions_kept` versions, so a slot moves to a fresh path before
    its document gets near that: every accepted write then stays provable. A client that picked the old
    path just before the move can land at most one more write there, hence the margin of one per client.
    """

    def __init__(self, slots: int, rotate_at: int, max_paths: int) -> None:
        self.generation = [0] * slots
        self.created: set[str] = set()
        self.rotate_at = rotate_at
        self.max_paths = max_paths
        self._lock = threading.Lock()

    @staticmethod
    def path(slot: int, generation: int) -> str:
        return f"conversation/shared/doc-{slot}-g{generation}.md"

    def current(self, slot: int) -> tuple[str, bool]:
        """The slot's path now, and whether it is known to exist (a 404 on it is then a bug)."""
        with self._lock:
            p = self.path(slot, self.generation[slot])
            return p, p in self.created

    def landed(self, slot: int, path: str, lock_version: int) -> None:
        with self._lock:
            self.created.add(path)
            if (
                lock_version >= self.rotate_at
                and path == self.path(slot, self.generation[slot])
                and len(self.paths()) < self.max_paths
            ):
                self.generation[slot] += 1

    def paths(self) -> list[str]:
        return [self.path(s, g) for s, top in enumerate(self.generation) for g in range(top + 1)]


@dataclass
class LoadWorld:
    url: str
    owner: Who
    clients: list[Who]
    ws: str
    shared_conv: str
    capped_conv: str
    shared: SharedDocuments
    accepted: list[AcceptedWrite] = field(default_factory=list)
    cap_prefilled: int = 0

    @property
    def shared_base(self) -> str:
        return conv_base(self.ws, self.shared_conv)

    @property
    def capped_base(self) -> str:
        return conv_base(self.ws, self.capped_conv)


def _status(r: requests.Response) -> Status:
    if r.status_code < 400:
        return r.status_code, None
    try:
        got = r.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return r.status_code, None
    return r.status_code, str(got)


def per_thread(url: str, operator_key: str) -> Callable[[], Api]:
    """An Api per calling thread: a requests.Session is not safe to share between threads."""
    local = threading.local()

    def api() -> Api:
        mine: Api | None = getattr(local, "api", None)
        if mine is None:
            mine = local.api = Api(url, operator_key)
        return mine

    return api


def _setup(url: str, operator_key: str, clients: int, versions_kept: int, seed: int) -> LoadWorld:
    api = Api(url, operator_key)
    owner = api.account(name=f"load-{seed}", human="owner")
    ws = api.workspace(owner, name="load")
    people = []
    for i in range(clients):
        who = api.human(owner, name=f"client-{i}")
        api.member(owner, ws, who)
        people.append(who)
    shared_conv = api.conversation(owner, ws)
    capped_conv = api.conversation(owner, ws)
    # Rotated paths stay well under the shared conversation's own cap: a slot's next create is never full.
    shared = SharedDocuments(SHARED_DOCUMENTS, max(1, versions_kept - clients - 4), CAP - 8)
    world = LoadWorld(url, owner, people, ws, shared_conv, capped_conv, shared)
    for slot in range(SHARED_DOCUMENTS):
        path = shared.path(slot, 0)
        content = f"# shared document {slot}\nmarker: setup\n"
        r = api.write(owner, world.shared_base, path, content)
        assert r.status_code == 201, r.text
        m = r.json()["memory"]
        world.accepted.append(AcceptedWrite(path, m["public_id"], m["lock_version"], content))
        shared.landed(slot, path, m["lock_version"])
    # The capped conversation starts a little below the cap, so the run's creators race for the rest.
    headroom = max(4, min(16, clients))
    world.cap_prefilled = CAP - headroom
    api_here = per_thread(url, operator_key)

    def prefill(i: int) -> None:
        r = api_here().write(owner, world.capped_base, f"conversation/cap/setup-{i}.md", f"setup {i}\n")
        assert r.status_code == 201, r.text

    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(prefill, range(world.cap_prefilled)))
    return world


class Client:
    """One thread's session: its own Human, its own HTTP connection, its own seeded draw."""

    def __init__(self, index: int, world: LoadWorld, budget: Budget, operator_key: str, seed: int) -> None:
        self.index = index
        self.world = world
        self.who = world.clients[index]
        self.api = Api(world.url, operator_key)
        self.budget = budget
        self.rng = random.Random(f"{seed}:{index}")
        self.samples: list[Sample] = []
        self.accepted: list[AcceptedWrite] = []
        self.forks: list[str] = []
        self.n = 0

    def send(
        self, kind: str, call: Callable[[], requests.Response], expected: Iterable[Status]
    ) -> requests.Response | None:
        """One request, timed and recorded; None when the budget is spent or no answer came."""
        if not self.budget.take():
            return None
        sent = time.perf_counter()
        try:
            r = call()
        except requests.RequestException as e:
            self.samples.append(Sample(kind, 0, type(e).__name__, sent, time.perf_counter(), False, str(e)[:200]))
            return None
        answered = time.perf_counter()
        status = _status(r)
        ok = status in set(expected)
        note = "" if ok else f"{kind}: {status[0]} {r.text[:200]}"
        self.samples.append(Sample(kind, status[0], status[1], sent, answered, ok, note))
        return r

    def run(self, barrier: threading.Barrier) -> None:
        verbs: dict[str, Callable[[], bool]] = {
            "show": self.do_show,
            "list": self.do_list,
            "write": self.do_write,
            "fork": self.do_fork,
            "block": self.do_block,
            "create": self.do_create,
        }
        deck = [kind for kind, n in MIX.items() for _ in range(n)]
        barrier.wait(timeout=60)
        while True:
            self.rng.shuffle(deck)
            for kind in deck:
                self.n += 1
                if not verbs[kind]():
                    return

    # Each verb answers False once the run's budget is spent.

    def do_show(self) -> bool:
        path, exists = self.world.shared.current(self.rng.randrange(SHARED_DOCUMENTS))
        expected = [(200, None)] if exists else [(200, None), (404, ABSENT)]
        r = self.send("show", lambda: self.api.show(self.who, self.world.shared_base, path), expected)
        return r is not None or not self.stopped

    def do_list(self) -> bool:
        r = self.send("list", lambda: self.api.ls(self.who, self.world.shared_base), [(200, None)])
        return r is not None or not self.stopped

    def do_write(self) -> bool:
        slot = self.rng.randrange(SHARED_DOCUMENTS)
        path, exists = self.world.shared.current(slot)
        base = self.world.shared_base
        read_expected = [(200, None)] if exists else [(200, None), (404, ABSENT)]
        r = self.send("show", lambda: self.api.show(self.who, base, path), read_expected)
        if r is None:
            return not self.stopped
        if r.status_code == 200:
            m = r.json()["memory"]
            pair: tuple[str | None, int | None] = (m["public_id"], m["lock_version"])
        elif r.status_code == 404:
            pair = (None, None)  # a slot's next path: whoever creates it first wins, the rest are stale
        else:
            return True
        content = f"# shared document {slot}\nmarker: client {self.index} op {self.n}\n{self._filler()}"
        w = self.send(
            "write",
            lambda: self.api.write(self.who, base, path, content, pair),
            [(200, None), (201, None), (409, STALE)],
        )
        if w is None:
            return not self.stopped
        if w.status_code in (200, 201):
            m = w.json()["memory"]
            self.accepted.append(AcceptedWrite(path, m["public_id"], m["lock_version"], content))
            self.world.shared.landed(slot, path, m["lock_version"])
        return True

    def do_fork(self) -> bool:
        url = f"/workspaces/{self.world.ws}/conversations/{self.world.shared_conv}/fork"
        r = self.send("fork", lambda: self.api.post(url, self.who), [(201, None)])
        if r is not None and r.status_code == 201:
            self.forks.append(r.json()["conversation"]["public_id"])
        return r is not None or not self.stopped

    def do_block(self) -> bool:
        url = f"/workspaces/{self.world.ws}/conversations/{self.world.shared_conv}/memory_block"
        r = self.send("block", lambda: self.api.post(url, self.who, {}), [(200, None)])
        return r is not None or not self.stopped

    def do_create(self) -> bool:
        path = f"conversation/cap/client-{self.index}-op-{self.n}.md"
        expected = [(201, None), (422, CAP_CODE)]
        r = self.send("create", lambda: self.api.write(self.who, self.world.capped_base, path, "a note\n"), expected)
        return r is not None or not self.stopped

    @property
    def stopped(self) -> bool:
        # A request that got no answer was recorded; only a spent budget ends the loop.
        return self.budget.hit_time or self.budget.hit_count

    def _filler(self) -> str:
        return "".join(self.rng.choice("abcdefghij klmnop\n") for _ in range(self.rng.randrange(0, 400)))


def _history(api: Api, who: Who, base: str, path: str) -> list[HistoryVersion]:
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        r = api.post(f"{base}/versions", who, {"memory": {"path": path, "limit": 100, "cursor": cursor}})
        if r.status_code == 404:
            return []  # a slot's next path nobody got to create
        r.raise_for_status()
        rows += r.json()["versions"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    out = []
    for v in rows:
        s = api.post(f"{base}/versions/show", who, {"memory": {"path": path, "lock_version": v["lock_version"]}})
        s.raise_for_status()
        text = s.json()["version"]["content"]
        out.append(HistoryVersion(v["public_id"], v["lock_version"], v["content_sha256"], text))
    return out


def _listing(api: Api, who: Who, base: str) -> list[dict[str, Any]]:
    r = api.ls(who, base)
    r.raise_for_status()
    rows: list[dict[str, Any]] = r.json()["memory"]
    return rows


def _stats(samples: Sequence[Sample]) -> KindStats:
    times = [s.ms for s in samples]
    return KindStats(
        len(samples),
        round(pct(times, 50), 3),
        round(pct(times, 95), 3),
        round(pct(times, 99), 3),
        dict(sorted(Counter(s.key for s in samples).items())),
    )


def run_load(
    url: str,
    *,
    clients: int = 8,
    seconds: float = 10.0,
    max_requests: int = 5000,
    seed: int = 0,
    operator_key: str | None = None,
    versions_kept: int = DEFAULT_VERSIONS_KEPT,
) -> LoadReport:
    """Run the load against the service at `url` and check the invariants afterwards.

    `operator_key` creates the run's account (default: AGENT_MEMORY_OPERATOR_KEY, which `start_local`
    sets); `versions_kept` is the service's AGENT_MEMORY_VERSIONS_KEPT.
    """
    if not 1 <= clients <= MAX_CLIENTS:
        raise ValueError(f"clients must be 1..{MAX_CLIENTS}")
    if not 0 < seconds <= 600 or max_requests < 1:
        raise ValueError("seconds must be in (0, 600] and max_requests at least 1")
    key = operator_key or os.environ.get("AGENT_MEMORY_OPERATOR_KEY")
    if not key:
        raise ValueError("no operator key: pass operator_key or set AGENT_MEMORY_OPERATOR_KEY")

    t0 = time.perf_counter()
    world = _setup(url, key, clients, versions_kept, seed)
    setup_seconds = time.perf_counter() - t0

    budget = Budget(seconds, max_requests)
    workers = [Client(i, world, budget, key, seed) for i in range(clients)]
    # The clock starts when the last client is ready, so thread start-up is not counted as load.
    barrier = threading.Barrier(clients, action=budget.start)
    errors: list[BaseException] = []

    def go(c: Client) -> None:
        try:
            c.run(barrier)
        except BaseException as e:  # a harness bug: surfaced once the others have stopped
            errors.append(e)
            budget.stop()

    threads = [threading.Thread(target=go, args=(c,), name=f"load-{c.index}", daemon=True) for c in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    for c in workers:
        c.api.http.close()  # else each keep-alive connection holds a gateway thread until collected
    ended = max((s.answered for c in workers for s in c.samples), default=time.perf_counter())
    if errors:
        raise RuntimeError("a load client failed") from errors[0]
    if any(t.is_alive() for t in threads):
        raise RuntimeError("a load client did not finish")
    elapsed = max(ended - budget.started, 1e-9)

    t1 = time.perf_counter()
    samples = [s for c in workers for s in c.samples]
    accepted = world.accepted + [w for c in workers for w in c.accepted]
    forks = [f for c in workers for f in c.forks]
    invariants, problems = _verify(world, key, clients, samples, accepted, forks, versions_kept)
    verify_seconds = time.perf_counter() - t1

    by_kind = {k: _stats([s for s in samples if s.kind == k]) for k in KINDS}
    overall = _stats(samples)
    notes = [s.note for s in samples if not s.expected][:EXAMPLES_KEPT]
    stopped_by: Literal["seconds", "max_requests", "both"] = (
        "both" if budget.hit_time and budget.hit_count else "max_requests" if budget.hit_count else "seconds"
    )
    return LoadReport(
        clients=clients,
        seconds=round(elapsed, 3),
        requests=len(samples),
        throughput_rps=round(len(samples) / elapsed, 1),
        kinds=by_kind,
        p50_ms=overall.p50_ms,
        p95_ms=overall.p95_ms,
        p99_ms=overall.p99_ms,
        statuses=overall.statuses,
        invariants=invariants,
        seed=seed,
        max_requests=max_requests,
        stopped_by=stopped_by,
        setup_seconds=round(setup_seconds, 3),
        verify_seconds=round(verify_seconds, 3),
        examples=tuple(notes + problems[: EXAMPLES_KEPT - len(notes)]),
    )


def _verify(
    world: LoadWorld,
    key: str,
    clients: int,
    samples: Sequence[Sample],
    accepted: Sequence[AcceptedWrite],
    forks: Sequence[str],
    versions_kept: int,
) -> tuple[Invariants, list[str]]:
    owner = world.owner
    api = per_thread(world.url, key)
    paths = world.shared.paths()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        histories = dict(
            zip(paths, pool.map(lambda p: _history(api(), owner, world.shared_base, p), paths), strict=True)
        )
        step = max(1, len(forks) // FORK_SAMPLES)
        sampled = list(forks[::step][:FORK_SAMPLES])
        fork_rows = list(pool.map(lambda c: _listing(api(), owner, conv_base(world.ws, c)), sampled))
        capped = _listing(api(), owner, world.capped_base)

    check = HistoryCheck()
    problems: list[str] = []
    for path in paths:
        mine = [w for w in accepted if w.path == path]
        one = check_history(mine, histories[path], versions_kept=versions_kept)
        check += one
        problems += [f"{path}: {p}" for p in one.problems]

    # A fork copies the parent's pointers at one instant: each copy must be a version some writer was told of.
    accepted_hashes = {(w.path, w.content_sha256) for w in accepted}
    fork_unexplained = sum(
        1 for rows in fork_rows for row in rows if (row["path"], row["content_sha256"]) not in accepted_hashes
    )

    creates = [s for s in samples if s.kind == "create"]
    created = [s for s in creates if s.status == 201]
    refused = [s for s in creates if s.code == CAP_CODE]
    wrong = [s for s in creates if s.status not in (201, 0) and s.code != CAP_CODE]
    premature = premature_refusals([(s.sent, s.answered) for s in refused], [(s.sent, s.answered) for s in created])

    invariants = Invariants(
        lost_updates=check.lost_updates,
        out_of_order=check.out_of_order,
        unexplained_versions=check.unexplained_versions,
        cap_expected=CAP,
        cap_actual=len(capped),
        cap_refusals_wrong_code=len(wrong),
        five_xx=sum(1 for s in samples if s.status >= 500),
        unexpected_4xx=sum(1 for s in samples if 400 <= s.status < 500 and not s.expected),
        accepted_writes=len(accepted) - SHARED_DOCUMENTS,
        shared_documents=len(paths),
        stale_refusals=sum(1 for s in samples if s.kind == "write" and s.code == STALE),
        unverified_writes=check.unverified_writes,
        cap_accepted=world.cap_prefilled + len(created),
        cap_refusals=len(refused),
        cap_premature_refusals=premature,
        fork_copies_unexplained=fork_unexplained,
        transport_errors=sum(1 for s in samples if s.status == 0),
    )
    return invariants, problems


# ---- python -m tests.loadrun --------------------------------------------------------------------------


def render(report: LoadReport) -> str:
    lines = [
        f"load run: {report.clients} clients, {report.seconds:.1f} s (stopped by {report.stopped_by}), "
        f"{report.requests} requests, {report.throughput_rps:.1f} req/s",
        "",
        f"{'kind':<8} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  statuses",
    ]
    rows = [*report.kinds.items(), ("all", _overall(report))]
    for name, k in rows:
        statuses = ", ".join(f"{s}: {n}" for s, n in k.statuses.items())
        lines.append(f"{name:<8} {k.count:>6} {k.p50_ms:>8.1f} {k.p95_ms:>8.1f} {k.p99_ms:>8.1f}  {statuses}")
    inv = report.invariants
    lines += [
        "",
        f"invariants: {'ok' if inv.ok else 'FAILED: ' + ', '.join(inv.failures())}",
        f"  lost updates {inv.lost_updates}, out of order {inv.out_of_order}, unexplained versions "
        f"{inv.unexplained_versions} (over {inv.accepted_writes} accepted writes, {inv.stale_refusals} stale "
        f"refusals, {inv.unverified_writes} unverifiable, on {inv.shared_documents} documents)",
        f"  cap {inv.cap_actual}/{inv.cap_expected} (accepted {inv.cap_accepted}, refused {inv.cap_refusals}, "
        f"wrong code {inv.cap_refusals_wrong_code}, premature {inv.cap_premature_refusals})",
        f"  5xx {inv.five_xx}, unexpected 4xx {inv.unexpected_4xx}, no answer {inv.transport_errors}, "
        f"fork copies unexplained {inv.fork_copies_unexplained}",
    ]
    lines += [f"  ! {e}" for e in report.examples]
    return "\n".join(lines)


def _overall(report: LoadReport) -> KindStats:
    return KindStats(report.requests, report.p50_ms, report.p95_ms, report.p99_ms, report.statuses)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.loadrun", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8, help=f"concurrent clients, 1..{MAX_CLIENTS} (default 8)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the load runs (default 10)")
    parser.add_argument("--max-requests", type=int, default=5000, help="stop after this many requests (default 5000)")
    parser.add_argument("--seed", type=int, default=0, help="seeds every client's mix (default 0)")
    parser.add_argument(
        "--storage",
        choices=("process", "thread"),
        default="process",
        help="the serialised moto in a child process (default: as in AWS, storage's work does not take the "
        "service's GIL), or in this process as `agent-memory serve` runs it",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= MAX_CLIENTS:
        parser.error(f"--clients must be 1..{MAX_CLIENTS}")

    # Imported here: tests.bench may import this module, and run_load itself needs neither.
    from .bench import isolate_environment, moto_process, stop_child

    isolate_environment()  # as the bench: its own embedded moto only, and no write budget in the way
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from agent_memory.core.settings import settings
    from agent_memory_sdk.local.runtime import start_local

    child = None
    if args.storage == "process":
        # start_local then uses this endpoint as it would any existing moto or LocalStack.
        child, os.environ["AWS_ENDPOINT_URL"] = moto_process()
    try:
        service = start_local(port=0)
    except BaseException:
        if child is not None:
            stop_child(child)
        raise
    try:
        report = run_load(
            service.url,
            clients=args.clients,
            seconds=args.seconds,
            max_requests=args.max_requests,
            seed=args.seed,
            operator_key=service.operator_key,
            versions_kept=settings().versions_kept,
        )
    finally:
        service.stop()
        if child is not None:
            stop_child(child)
    print(json.dumps(report.to_dict(), indent=2) if args.json else render(report))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
