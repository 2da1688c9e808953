"""A reusable mixed write workload over HTTP, and the check of what it was told after the fact.

Not a pytest module. `tests/http/test_crash_recovery.py` drives it against a server it SIGKILLs and
restarts; a soak run drives many workers for a long time with `keep_acks=False`.

`build_world(url, operator_key, seed)` makes, on a running service: an account (operator key) whose one
Human acts for every worker; a workspace with duplicate merging off (so an append is always a record of
its own, findable by the id it was answered); a shared conversation with a few documents every writer
races on; a capped conversation pre-filled a few documents below the 64-document cap; and an
organization Memory with a few files every writer races on.

`Worker(world, index, seed)` loops, in its thread (`run(stop)`) or one operation at a time (`step()`), a
seeded deck of:

- write: a conditional write on a shared document (show it, write with the pair it read);
  `409 stale_object` is a loser's answer;
- fork: a fork of the shared conversation;
- file: a conditional write on a shared file of the Memory, or a new file of the worker's own;
- record: a record append;
- create: a new document in the capped conversation; `422 memory_full` past the cap.

Every 2xx answer is an acknowledgement, kept (unless `keep_acks=False`) with what proves it later: the
pair the answer named and the content written, which carries a marker no other request carries. A request
that got no answer (connection refused or reset, timeout) is *unknown*: it may or may not have landed, so
its content is kept as something a history may show without being acknowledged.

Storage stays bounded while the worker runs (`recycle=True`): a worker deletes its oldest forks, records
and new files once it holds more than a few, and when the capped conversation is full it deletes one
document of its own, so creates keep racing for the last places. A shared path moves to a fresh one
before its history outgrows the versions the service keeps (so every acknowledged write stays provable),
for at most `MAX_GENERATIONS` paths a slot; after that the service's own retention (100 versions) bounds
it, and the checker counts writes pruned by design as unverifiable rather than lost. What this module
cannot bound: what deletes and retention leave behind (a deleted fork's rows, the version records of
deleted documents and files, content objects no row points at any more) stays in storage until a sweep
(`AWS_ENDPOINT_URL=<storage_url> agent-memory sweep`), so a long soak should run one now and then; and
each deleted fork keeps one tombstone row for good (the contract has no way to remove it).

`verify(world, acks, api)` reads everything back and answers the problems it found (`Verdict`).
"""

from __future__ import annotations

import random
import threading
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests
from agent_memory.core.model import DEFAULT_VERSIONS_KEPT, MAX_DOCUMENTS_PER_ANCHOR

# A write acknowledged on a versioned path, the history it is checked against and the checker: the load
# run's, which also takes the hashes of writes that got no answer (`sent`).
from .loadrun import AcceptedWrite as Written
from .loadrun import HistoryVersion, Status, check_history, sha256
from .loadrun import _status as _status
from .support import Api, Who, conv_base

KINDS = ("write", "fork", "file", "record", "create")
# Exact proportions in every deck of 16, so even a few hundred operations do each kind several times.
MIX: dict[str, int] = {"write": 5, "fork": 1, "file": 4, "record": 3, "create": 3}
DELETES = ("fork_delete", "file_delete", "record_delete", "create_delete")
SHARED_DOCUMENTS = 4
SHARED_FILES = 4
MAX_GENERATIONS = 4
CAP = MAX_DOCUMENTS_PER_ANCHOR
CAP_HEADROOM = 8  # the places left in the capped conversation once the world is built
# What one worker keeps of its own before it deletes the oldest again (recycle=True).
FORKS_KEPT = 3
FILES_KEPT = 8
RECORDS_KEPT = 24
# Of the file operations, this share are conditional writes on the shared files; the rest create.
SHARED_FILE_SHARE = 0.7
SURPRISES_KEPT = 20

STALE = "stale_object"
FULL = "memory_full"
ABSENT = "memory_not_found"
GONE = "not_found"

# ---- what was acknowledged ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fork:
    """An answered fork, and the shared paths known to exist before it was asked for."""

    public_id: str
    paths_before: tuple[str, ...]


@dataclass(frozen=True)
class Appended:
    public_id: str
    content: str


@dataclass
class Acks:
    """What the service acknowledged, and what it may have done without saying (no answer came).

    Deletes are keyed `fork:<id>`, `record:<id>`, `file:<path>` and `create:<path>` (a worker never
    reuses a path it created, so a path names one document).
    """

    writes: list[Written] = field(default_factory=list)  # shared conversation documents
    files: list[Written] = field(default_factory=list)  # the Memory's files, shared and new
    creates: list[Written] = field(default_factory=list)  # the capped conversation's documents
    forks: list[Fork] = field(default_factory=list)
    records: list[Appended] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)
    # Sent, never answered: (path, content) of writes, contents of appends, keys of deletes.
    unknown_writes: list[tuple[str, str]] = field(default_factory=list)
    unknown_files: list[tuple[str, str]] = field(default_factory=list)
    unknown_creates: list[tuple[str, str]] = field(default_factory=list)
    unknown_records: list[str] = field(default_factory=list)
    unknown_deletes: set[str] = field(default_factory=set)
    unknown_forks: int = 0

    def extend(self, other: Acks) -> None:
        self.writes += other.writes
        self.files += other.files
        self.creates += other.creates
        self.forks += other.forks
        self.records += other.records
        self.deleted |= other.deleted
        self.unknown_writes += other.unknown_writes
        self.unknown_files += other.unknown_files
        self.unknown_creates += other.unknown_creates
        self.unknown_records += other.unknown_records
        self.unknown_deletes |= other.unknown_deletes
        self.unknown_forks += other.unknown_forks

    @classmethod
    def of(cls, parts: Iterable[Acks]) -> Acks:
        out = cls()
        for part in parts:
            out.extend(part)
        return out

    def count(self) -> int:
        """Acknowledged changes, deletes included."""
        return (
            len(self.writes)
            + len(self.files)
            + len(self.creates)
            + len(self.forks)
            + len(self.records)
            + len(self.deleted)
        )

    def unknown(self) -> int:
        return (
            len(self.unknown_writes)
            + len(self.unknown_files)
            + len(self.unknown_creates)
            + len(self.unknown_records)
            + len(self.unknown_deletes)
            + self.unknown_forks
        )


# ---- the world -----------------------------------------------------------------------------------------


class Slots:
    """A few shared paths every writer races on, each moving to a fresh path before its history outgrows
    what the service keeps. A worker that read the old path just before a move can still land one write
    there, hence the margin below `versions_kept`."""

    def __init__(self, pattern: str, slots: int, rotate_at: int, generations: int) -> None:
        self.pattern = pattern
        self.generation = [0] * slots
        self.rotate_at = rotate_at
        self.generations = generations
        self.created: set[str] = set()
        self._lock = threading.Lock()

    def path(self, slot: int, generation: int) -> str:
        return self.pattern.format(slot=slot, generation=generation)

    def current(self, slot: int) -> tuple[str, bool]:
        """The slot's path now, and whether it is known to exist (else a 404 on it is expected)."""
        with self._lock:
            p = self.path(slot, self.generation[slot])
            return p, p in self.created

    def landed(self, slot: int, path: str, lock_version: int) -> None:
        with self._lock:
            self.created.add(path)
            top = self.generation[slot]
            if lock_version >= self.rotate_at and path == self.path(slot, top) and top + 1 < self.generations:
                self.generation[slot] += 1

    def known(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self.created))

    def paths(self) -> list[str]:
        with self._lock:
            return [self.path(s, g) for s, top in enumerate(self.generation) for g in range(top + 1)]


@dataclass
class World:
    """What `build_world` made. `url` may be changed when the service comes back on another port: a
    worker reads it when it is made, so workers made after the change use the new one."""

    url: str
    operator_key: str
    seed: int
    who: Who
    ws: str
    shared_conv: str
    capped_conv: str
    memory_id: str
    documents: Slots
    files: Slots
    versions_kept: int
    # The writes the world was built with, checked like any acknowledged ones.
    setup: Acks = field(default_factory=Acks)
    _enrolled: set[tuple[int, int]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def shared_base(self) -> str:
        return conv_base(self.ws, self.shared_conv)

    @property
    def capped_base(self) -> str:
        return conv_base(self.ws, self.capped_conv)

    @property
    def files_url(self) -> str:
        return f"/memories/{self.memory_id}/files"

    @property
    def records_url(self) -> str:
        return f"/workspaces/{self.ws}/records"

    def conv_url(self, conv: str) -> str:
        return f"/workspaces/{self.ws}/conversations/{conv}"

    def enrol(self, index: int, seed: int) -> str:
        """The marker of a new worker; the same (index, seed) twice would send the same markers."""
        with self._lock:
            if (index, seed) in self._enrolled:
                raise ValueError(f"a worker {index} with seed {seed} already ran on this world")
            self._enrolled.add((index, seed))
        return f"w{index}s{seed}"


def build_world(
    url: str, operator_key: str, seed: int, *, versions_kept: int = DEFAULT_VERSIONS_KEPT, max_workers: int = 16
) -> World:
    """Build the workload's world on the service at `url` (`versions_kept`: its AGENT_MEMORY_VERSIONS_KEPT;
    `max_workers`: the most workers that will race, which sets how early a shared path moves on)."""
    api = Api(url, operator_key)
    try:
        who = api.account(name=f"workload-{seed}", human="owner")
        ws = api.workspace(who, name="workload")
        # Duplicate merging would fold one worker's append into another's record: each must be its own.
        r = api.call("PATCH", f"/workspaces/{ws}", who, {"workspace": {"settings": {"dedup": {"enabled": False}}}})
        assert r.status_code == 200, r.text
        shared_conv = api.conversation(who, ws)
        capped_conv = api.conversation(who, ws)
        r = api.post("/memories", who, {"memory": {"name": f"workload-{seed}", "description": "workload files"}})
        assert r.status_code == 201, r.text
        memory_id = str(r.json()["memory"]["memory_id"])
        rotate_at = max(1, versions_kept - max_workers - 4)
        world = World(
            url,
            operator_key,
            seed,
            who,
            ws,
            shared_conv,
            capped_conv,
            memory_id,
            Slots("conversation/shared/doc-{slot}-g{generation}.md", SHARED_DOCUMENTS, rotate_at, MAX_GENERATIONS),
            Slots("shared/file-{slot}-g{generation}.md", SHARED_FILES, rotate_at, MAX_GENERATIONS),
            versions_kept,
        )
        for slot in range(SHARED_DOCUMENTS):
            path, content = world.documents.path(slot, 0), f"# shared document {slot}\nmarker: setup\n"
            m = _answered(api.write(who, world.shared_base, path, content), 201, "memory")
            world.setup.writes.append(Written(path, m["public_id"], m["lock_version"], content))
            world.documents.landed(slot, path, m["lock_version"])
        for slot in range(SHARED_FILES):
            path, content = world.files.path(slot, 0), f"# shared file {slot}\nmarker: setup\n"
            f = _answered(api.post(world.files_url, who, {"file": _write_body(path, content)}), 201, "file")
            world.setup.files.append(Written(path, f["public_id"], f["lock_version"], content))
            world.files.landed(slot, path, f["lock_version"])
        for i in range(CAP - CAP_HEADROOM):
            path, content = f"conversation/cap/setup-{i}.md", f"setup note {i}\n"
            m = _answered(api.write(who, world.capped_base, path, content), 201, "memory")
            world.setup.creates.append(Written(path, m["public_id"], m["lock_version"], content))
    finally:
        api.http.close()
    return world


def _answered(r: requests.Response, status: int, key: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    out: dict[str, Any] = r.json()[key]
    return out


def _write_body(path: str, content: str, pair: tuple[str | None, int | None] = (None, None)) -> dict[str, Any]:
    return {"path": path, "content": content, "expected_public_id": pair[0], "expected_lock_version": pair[1]}


# ---- the worker ----------------------------------------------------------------------------------------


class Worker:
    """One thread's share of the load: its own HTTP connection, its own seeded deck, its own markers.

    `accepted` counts acknowledged changes by kind (deletes under `DELETES`), `refused` the contract's
    expected refusals (stale pairs, a full conversation), `unknown` requests that got no answer and
    `unexpected` answers the mix does not expect (`surprises` keeps the first few verbatim).

    `keep_acks=False` keeps counters only (a soak's memory stays flat). `recycle=False` never deletes: only
    for short runs, since forks, records and new files then pile up (a Memory refuses its 1001st file).
    `stop_on_transport_error` ends `run` at the first request without an answer (the server is gone).
    """

    def __init__(
        self,
        world: World,
        index: int,
        seed: int,
        *,
        keep_acks: bool = True,
        recycle: bool = True,
        stop_on_transport_error: bool = False,
        filler: int = 300,
    ) -> None:
        self.world = world
        self.index = index
        self.tag = world.enrol(index, seed)
        self.api = Api(world.url, world.operator_key)
        self.who = world.who
        self.rng = random.Random(f"{world.seed}:{seed}:{index}")
        self.acks: Acks | None = Acks() if keep_acks else None
        self.recycle = recycle
        self.stop_on_transport_error = stop_on_transport_error
        self.filler = filler
        self.accepted: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.unexpected: Counter[str] = Counter()
        self.surprises: list[str] = []
        self.requests = 0
        self.in_flight = False
        self.broken = False  # a request got no answer
        self.error: Exception | None = None
        self.n = 0
        self._deck: list[str] = []
        # What this worker made and may delete again (recycle), oldest first.
        self._forks: deque[str] = deque()
        self._files: deque[tuple[str, str, int]] = deque()
        self._records: deque[str] = deque()
        self._creates: deque[tuple[str, str, int]] = deque()
        self._verbs: dict[str, Callable[[], None]] = {
            "write": self.do_write,
            "fork": self.do_fork,
            "file": self.do_file,
            "record": self.do_record,
            "create": self.do_create,
        }

    @property
    def acknowledged(self) -> int:
        return sum(self.accepted.values())

    def run(self, stop: threading.Event, go: threading.Event | None = None) -> None:
        """Step until `stop` is set (or the first request without an answer, if told to stop on one),
        waiting between steps while `go` is clear. A failure of the worker itself (not of a request) is
        kept in `error`, for the driver to raise."""
        try:
            while not stop.is_set():
                if go is not None:
                    go.wait()
                self.step()
                if self.broken and self.stop_on_transport_error:
                    return
        except Exception as exc:
            self.error = exc
        finally:
            self.api.http.close()

    def step(self) -> str:
        """One operation of the deck (a few requests); the kind it was."""
        if not self._deck:
            self._deck = [kind for kind, n in MIX.items() for _ in range(n)]
            self.rng.shuffle(self._deck)
        kind = self._deck.pop()
        self.n += 1
        self._verbs[kind]()
        return kind

    # ---- one request ----

    def send(
        self, kind: str, call: Callable[[], requests.Response], expected: Collection[Status]
    ) -> requests.Response | None:
        """One request; None when no answer came (its effect is then unknown)."""
        self.requests += 1
        self.in_flight = True
        try:
            r = call()
        except requests.RequestException:
            self.broken = True
            self.unknown[kind] += 1
            return None
        finally:
            self.in_flight = False
        status = _status(r)
        if status not in expected:
            self.unexpected[kind] += 1
            if len(self.surprises) < SURPRISES_KEPT:
                self.surprises.append(f"{self.tag} {kind}: {r.status_code} {r.text[:300]}")
        elif status[0] >= 400:
            self.refused[kind] += 1
        return r

    def _ack(self, kind: str) -> Acks | None:
        self.accepted[kind] += 1
        return self.acks

    def _marker(self) -> str:
        return f"marker {self.tag} op {self.n}"

    def _filler(self) -> str:
        # Some bulk, so the journal grows and compacts; never a run of digits a PII scan could take for one.
        return "".join(self.rng.choice("abcdefghij klmnop\n") for _ in range(self.rng.randrange(0, self.filler + 1)))

    # ---- the verbs ----

    def do_write(self) -> None:
        slot = self.rng.randrange(SHARED_DOCUMENTS)
        path, exists = self.world.documents.current(slot)
        base = self.world.shared_base
        r = self.send("show", lambda: self.api.show(self.who, base, path), _read_expected(exists))
        pair = _pair_read(r, "memory")
        if pair is None:
            return
        content = f"# shared document {slot}\n{self._marker()}\n{self._filler()}"
        w = self.send(
            "write",
            lambda: self.api.write(self.who, base, path, content, pair),
            {(200, None), (201, None), (409, STALE)},
        )
        if w is None:
            if self.acks is not None:
                self.acks.unknown_writes.append((path, content))
        elif w.status_code in (200, 201):
            m = w.json()["memory"]
            acks = self._ack("write")
            if acks is not None:
                acks.writes.append(Written(path, m["public_id"], m["lock_version"], content))
            self.world.documents.landed(slot, path, m["lock_version"])

    def do_fork(self) -> None:
        before = self.world.documents.known()
        url = f"{self.world.conv_url(self.world.shared_conv)}/fork"
        r = self.send("fork", lambda: self.api.post(url, self.who), {(201, None)})
        if r is None:
            if self.acks is not None:
                self.acks.unknown_forks += 1
            return
        if r.status_code != 201:
            return
        fork = str(r.json()["conversation"]["public_id"])
        acks = self._ack("fork")
        if acks is not None:
            acks.forks.append(Fork(fork, before))
        if not self.recycle:
            return
        self._forks.append(fork)
        if len(self._forks) > FORKS_KEPT:
            old = self._forks.popleft()
            d = self.send(
                "fork_delete", lambda: self.api.post(f"{self.world.conv_url(old)}/delete", self.who, {}), {(204, None)}
            )
            self._deleted("fork_delete", f"fork:{old}", d)

    def do_file(self) -> None:
        if self.rng.random() < SHARED_FILE_SHARE:
            self._shared_file()
        else:
            self._new_file()

    def _shared_file(self) -> None:
        slot = self.rng.randrange(SHARED_FILES)
        path, exists = self.world.files.current(slot)
        url = self.world.files_url
        r = self.send(
            "show", lambda: self.api.post(f"{url}/show", self.who, {"file": {"path": path}}), _read_expected(exists)
        )
        pair = _pair_read(r, "file")
        if pair is None:
            return
        content = f"# shared file {slot}\n{self._marker()}\n{self._filler()}"
        body = {"file": _write_body(path, content, pair)}
        w = self.send("file", lambda: self.api.post(url, self.who, body), {(201, None), (409, STALE)})
        written = self._file_written(path, content, w)
        if written is not None:
            self.world.files.landed(slot, path, written.lock_version)

    def _new_file(self) -> None:
        path = f"new/{self.tag}-{self.n}.md"
        content = f"# a file of {self.tag}\n{self._marker()}\n{self._filler()}"
        url = self.world.files_url
        w = self.send("file", lambda: self.api.post(url, self.who, {"file": _write_body(path, content)}), {(201, None)})
        written = self._file_written(path, content, w)
        if written is None or not self.recycle:
            return
        self._files.append((path, written.public_id, written.lock_version))
        if len(self._files) > FILES_KEPT:
            old, pid, lv = self._files.popleft()
            body = {"file": {"path": old, "expected_public_id": pid, "expected_lock_version": lv}}
            d = self.send("file_delete", lambda: self.api.post(f"{url}/delete", self.who, body), {(204, None)})
            self._deleted("file_delete", f"file:{old}", d)

    def _file_written(self, path: str, content: str, w: requests.Response | None) -> Written | None:
        if w is None:
            if self.acks is not None:
                self.acks.unknown_files.append((path, content))
            return None
        if w.status_code != 201:
            return None
        f = w.json()["file"]
        written = Written(path, f["public_id"], f["lock_version"], content)
        acks = self._ack("file")
        if acks is not None:
            acks.files.append(written)
        return written

    def do_record(self) -> None:
        content = f"Workload note {self._marker()}: {' '.join(self.rng.choice(WORDS) for _ in range(12))}."
        url = self.world.records_url
        r = self.send(
            "record",
            lambda: self.api.post(url, self.who, {"record": {"type": "fact", "content": content}}),
            {(201, None)},
        )
        if r is None:
            if self.acks is not None:
                self.acks.unknown_records.append(content)
            return
        if r.status_code != 201:
            return
        rec = str(r.json()["record"]["public_id"])
        acks = self._ack("record")
        if acks is not None:
            acks.records.append(Appended(rec, content))
        if not self.recycle:
            return
        self._records.append(rec)
        if len(self._records) > RECORDS_KEPT:
            old = self._records.popleft()
            body = {"record": {"expected_lock_version": 1}}
            d = self.send("record_delete", lambda: self.api.post(f"{url}/{old}/delete", self.who, body), {(204, None)})
            self._deleted("record_delete", f"record:{old}", d)

    def do_create(self) -> None:
        path = f"conversation/cap/{self.tag}-{self.n}.md"
        content = f"a note, {self._marker()}\n"
        base = self.world.capped_base
        r = self.send("create", lambda: self.api.write(self.who, base, path, content), {(201, None), (422, FULL)})
        if r is None:
            if self.acks is not None:
                self.acks.unknown_creates.append((path, content))
            return
        if r.status_code == 201:
            m = r.json()["memory"]
            acks = self._ack("create")
            if acks is not None:
                acks.creates.append(Written(path, m["public_id"], m["lock_version"], content))
            if self.recycle:
                self._creates.append((path, m["public_id"], m["lock_version"]))
        elif self.recycle and self._creates:
            # Full: give one place back, so the creators keep racing for the last places.
            old, pid, lv = self._creates.popleft()
            d = self.send("create_delete", lambda: self.api.delete(self.who, base, old, (pid, lv)), {(204, None)})
            self._deleted("create_delete", f"create:{old}", d)

    def _deleted(self, kind: str, key: str, r: requests.Response | None) -> None:
        if r is None:
            if self.acks is not None:
                self.acks.unknown_deletes.add(key)
        elif r.status_code == 204:
            acks = self._ack(kind)
            if acks is not None:
                acks.deleted.add(key)


# Words for record texts: a record's marker makes it unique, the words make it look like one.
WORDS = (
    *("invoice", "deploy", "region", "cache", "ticket", "owner", "schedule", "budget", "review", "release"),
    *("branch", "quota", "alert", "latency", "backup", "policy", "vendor", "contract", "retry", "timeout"),
)


def _read_expected(exists: bool) -> set[Status]:
    # A slot's next path is absent until someone creates it: the first writer creates it with null/null.
    return {(200, None)} if exists else {(200, None), (404, ABSENT)}


def _pair_read(r: requests.Response | None, key: str) -> tuple[str | None, int | None] | None:
    """The pair a read answered (null/null for an absent path); None when there is nothing to write on."""
    if r is None:
        return None
    if r.status_code == 200:
        m = r.json()[key]
        return m["public_id"], m["lock_version"]
    if r.status_code == 404 and _status(r)[1] == ABSENT:
        return None, None
    return None


# ---- the check ----------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """What `verify` found: the problems (none when everything acknowledged is there) and what it checked."""

    problems: list[str] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)
    unverifiable: int = 0
    cap_filled: int = 0  # documents verify itself created to fill the capped conversation

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        head = f"{len(self.problems)} problems; checked {dict(self.checked)}"
        return "\n".join([head, *self.problems[:40]])


class _Reader:
    """The reads `verify` makes, each one required to answer (a read the service refuses is a problem)."""

    def __init__(self, api: Api, who: Who) -> None:
        self.api = api
        self.who = who

    def post(self, url: str, body: Any) -> requests.Response:
        return self.api.post(url, self.who, body)

    def versions(self, url: str, key: str, path: str, read: Collection[int]) -> list[HistoryVersion] | None:
        """A path's whole history (None when the path does not exist), with the text of the versions
        numbered in `read`."""
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            r = self.post(f"{url}/versions", {key: {"path": path, "limit": 100, "cursor": cursor}})
            if _status(r) == (404, ABSENT):
                return None
            assert r.status_code == 200, r.text
            rows += r.json()["versions"]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                break
        out = []
        for v in rows:
            text = None
            if v["lock_version"] in read and not v["redacted"]:
                s = self.post(f"{url}/versions/show", {key: {"path": path, "lock_version": v["lock_version"]}})
                assert s.status_code == 200, s.text
                text = str(s.json()["version"]["content"])
            out.append(HistoryVersion(v["public_id"], v["lock_version"], v["content_sha256"], text))
        return out

    def listing(self, base: str) -> list[dict[str, Any]]:
        r = self.api.ls(self.who, base)
        assert r.status_code == 200, r.text
        rows: list[dict[str, Any]] = r.json()["memory"]
        return rows

    def files(self, url: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            r = self.api.get(url, self.who, params={"limit": "1000", **({"cursor": cursor} if cursor else {})})
            assert r.status_code == 200, r.text
            rows += r.json()["files"]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                return rows

    def exported(self, url: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            r = self.api.get(f"{url}/export", self.who, params={"cursor": cursor} if cursor else None)
            assert r.status_code == 200, r.text
            rows += [_json(line) for line in r.text.splitlines() if line.strip()]
            cursor = r.headers.get("export-next-cursor")
            if not cursor:
                return rows


def _json(line: str) -> dict[str, Any]:
    import json

    out: dict[str, Any] = json.loads(line)
    return out


def _group(writes: Iterable[Written]) -> dict[str, list[Written]]:
    out: dict[str, list[Written]] = {}
    for w in writes:
        out.setdefault(w.path, []).append(w)
    return out


def _sent(pairs: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path, content in pairs:
        out.setdefault(path, set()).add(sha256(content))
    return out


def verify(world: World, acks: Acks, api: Api, *, read_content: bool = True, fill_cap: bool = True) -> Verdict:
    """Read back everything `acks` (plus the world's own setup) says was acknowledged; answer what is wrong.

    `read_content` reads the text of every acknowledged version (else hashes only); `fill_cap` ends by
    creating documents in the capped conversation until it is full, which must happen at exactly the cap
    (this changes the world: later creates are refused until a worker gives a place back).
    """
    everything = Acks.of([world.setup, acks])
    verdict = Verdict()
    reader = _Reader(api, world.who)
    _verify_documents(world, everything, reader, verdict, read_content)
    _verify_forks(world, everything, reader, verdict)
    _verify_files(world, everything, reader, verdict, read_content)
    _verify_records(world, everything, reader, verdict)
    _verify_capped(world, everything, reader, verdict, fill_cap)
    return verdict


def _histories(
    verdict: Verdict,
    reader: _Reader,
    url: str,
    key: str,
    paths: Iterable[str],
    acked: dict[str, list[Written]],
    sent: dict[str, set[str]],
    versions_kept: int,
    read_content: bool,
) -> None:
    for path in paths:
        mine = acked.get(path, [])
        told = {w.lock_version for w in mine} if read_content else set()
        history = reader.versions(url, key, path, told)
        if history is None:
            if mine:
                verdict.problems.append(f"{path}: acknowledged writes, but the path does not exist")
            continue
        one = check_history(mine, history, versions_kept=versions_kept, sent=sent.get(path, set()))
        verdict.problems += [f"{path}: {problem}" for problem in one.problems]
        verdict.checked[key + " versions"] += len(mine) - one.lost_updates - one.out_of_order - one.unverified_writes
        verdict.unverifiable += one.unverified_writes


def _verify_documents(world: World, acks: Acks, reader: _Reader, verdict: Verdict, read_content: bool) -> None:
    acked, sent = _group(acks.writes), _sent(acks.unknown_writes)
    paths = world.documents.paths()
    _histories(verdict, reader, world.shared_base, "memory", paths, acked, sent, world.versions_kept, read_content)
    listed = reader.listing(world.shared_base)
    stray = sorted({row["path"] for row in listed} - set(paths))
    if stray:
        verdict.problems.append(f"the shared conversation lists paths nobody wrote: {stray[:5]}")


def _allowed_contents(acked: Iterable[Written], unknown: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    out = _sent(unknown)
    for w in acked:
        out.setdefault(w.path, set()).add(sha256(w.content))
    return out


def _verify_forks(world: World, acks: Acks, reader: _Reader, verdict: Verdict) -> None:
    allowed = _allowed_contents(acks.writes, acks.unknown_writes)
    for fork in acks.forks:
        key = f"fork:{fork.public_id}"
        if key in acks.unknown_deletes:
            continue
        r = reader.api.get(world.conv_url(fork.public_id), world.who)
        if key in acks.deleted:
            if _status(r) != (404, GONE):
                verdict.problems.append(f"fork {fork.public_id} was deleted (204) but answers {r.status_code}")
            verdict.checked["fork deletes"] += 1
            continue
        if r.status_code != 200:
            verdict.problems.append(f"acknowledged fork {fork.public_id} answers {r.status_code} {r.text[:200]}")
            continue
        if r.json()["conversation"]["parent_public_id"] != world.shared_conv:
            verdict.problems.append(f"fork {fork.public_id} does not name the shared conversation as its parent")
        rows = reader.listing(conv_base(world.ws, fork.public_id))
        paths = {row["path"] for row in rows}
        missing = sorted(set(fork.paths_before) - paths)
        if missing:
            verdict.problems.append(f"fork {fork.public_id} lacks documents its parent had before it: {missing}")
        for row in rows:
            if row["content_sha256"] not in allowed.get(row["path"], set()):
                verdict.problems.append(f"fork {fork.public_id}: {row['path']} holds content nobody sent")
        verdict.checked["forks"] += 1


def _verify_files(world: World, acks: Acks, reader: _Reader, verdict: Verdict, read_content: bool) -> None:
    url = world.files_url
    shared = set(world.files.paths())
    acked, sent = _group(acks.files), _sent(acks.unknown_files)
    _histories(verdict, reader, url, "file", sorted(shared), acked, sent, world.versions_kept, read_content)
    allowed = _allowed_contents(acks.files, acks.unknown_files)
    rows = reader.files(url)
    listed = {row["path"]: row for row in rows}
    for path, writes in acked.items():
        if path in shared:
            continue
        key = f"file:{path}"
        if key in acks.unknown_deletes:
            continue
        if key in acks.deleted:
            if path in listed:
                verdict.problems.append(f"{path} was deleted (204) but is still listed")
            verdict.checked["file deletes"] += 1
            continue
        (w,) = writes  # a new path is written once, by the worker that named it
        row = listed.get(path)
        if row is None or (row["public_id"], row["lock_version"]) != (w.public_id, w.lock_version):
            verdict.problems.append(f"acknowledged file {path} v{w.lock_version} is not what the Memory lists: {row}")
            continue
        if read_content:
            s = reader.post(f"{url}/show", {"file": {"path": path}})
            if s.status_code != 200 or s.json()["file"]["content"] != w.content:
                verdict.problems.append(f"acknowledged file {path} does not read back as written: {s.text[:200]}")
                continue
        verdict.checked["new files"] += 1
    for path, row in listed.items():
        if row["content_sha256"] not in allowed.get(path, set()):
            verdict.problems.append(f"the Memory lists {path} with content nobody sent")
    # The Memory's own counters are kept beside its files: they must agree with what it lists.
    r = reader.api.get(f"/memories/{world.memory_id}", world.who)
    assert r.status_code == 200, r.text
    detail = r.json()["memory"]
    if detail["file_count"] != len(rows):
        verdict.problems.append(f"the Memory says {detail['file_count']} files and lists {len(rows)}")
    if detail["bytesize"] != sum(row["bytesize"] for row in rows):
        verdict.problems.append(f"the Memory says {detail['bytesize']} bytes, its files hold another total")


def _verify_records(world: World, acks: Acks, reader: _Reader, verdict: Verdict) -> None:
    url = world.records_url
    for rec in acks.records:
        key = f"record:{rec.public_id}"
        if key in acks.unknown_deletes:
            continue
        r = reader.api.get(f"{url}/{rec.public_id}", world.who)
        if key in acks.deleted:
            if _status(r) != (404, GONE):
                verdict.problems.append(f"record {rec.public_id} was deleted (204) but answers {r.status_code}")
            verdict.checked["record deletes"] += 1
            continue
        if r.status_code != 200 or r.json()["record"]["content"] != rec.content:
            verdict.problems.append(f"acknowledged record {rec.public_id} answers {r.status_code} {r.text[:200]}")
            continue
        verdict.checked["records"] += 1
    sent = {rec.content for rec in acks.records} | set(acks.unknown_records)
    for row in reader.exported(url):
        if row["content"] not in sent:
            verdict.problems.append(f"record {row['public_id']} holds content nobody sent: {row['content'][:80]!r}")
        if f"record:{row['public_id']}" in acks.deleted:
            verdict.problems.append(f"record {row['public_id']} was deleted (204) but is still exported")


def _verify_capped(world: World, acks: Acks, reader: _Reader, verdict: Verdict, fill_cap: bool) -> None:
    base = world.capped_base
    rows = {row["path"]: row for row in reader.listing(base)}
    allowed = _allowed_contents(acks.creates, acks.unknown_creates)
    for w in acks.creates:
        key = f"create:{w.path}"
        if key in acks.unknown_deletes:
            continue
        row = rows.get(w.path)
        if key in acks.deleted:
            if row is not None:
                verdict.problems.append(f"{w.path} was deleted (204) but is still listed")
        elif row is None or (row["public_id"], row["lock_version"]) != (w.public_id, w.lock_version):
            verdict.problems.append(f"acknowledged create {w.path} is not what the conversation lists: {row}")
        verdict.checked["creates"] += 1
    for path, row in rows.items():
        if row["content_sha256"] not in allowed.get(path, set()):
            verdict.problems.append(f"the capped conversation lists {path} with content nobody sent")
    if len(rows) > CAP:
        verdict.problems.append(f"the capped conversation holds {len(rows)} documents, past the cap of {CAP}")
    if not fill_cap:
        return
    # The cap is enforced by a counter kept beside the documents: if a restart left it apart from what is
    # listed, the conversation fills up early or late.
    made = 0
    for i in range(CAP + 1):
        r = reader.api.write(world.who, base, f"conversation/cap/verify-{world.seed}-{i}.md", "filling up\n")
        if _status(r) == (422, FULL):
            break
        if r.status_code != 201:
            verdict.problems.append(f"a create to fill the capped conversation answered {r.status_code} {r.text[:200]}")
            return
        made += 1
    verdict.cap_filled = made
    after = len(reader.listing(base))
    if len(rows) + made != CAP or after != CAP:
        verdict.problems.append(
            f"the capped conversation listed {len(rows)} documents and took {made} more before memory_full "
            f"(listing {after} then): the cap is {CAP}"
        )


def all_acks(workers: Iterable[Worker]) -> Acks:
    return Acks.of(w.acks for w in workers if w.acks is not None)


def start(workers: Sequence[Worker], stop: threading.Event) -> list[threading.Thread]:
    """A started daemon thread per worker, running until `stop` (or, if told to, its first lost answer)."""
    out = []
    for w in workers:
        t = threading.Thread(target=w.run, args=(stop,), name=f"workload-{w.tag}", daemon=True)
        t.start()
        out.append(t)
    return out
