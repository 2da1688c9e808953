"""The local storage's data folder: a journal of the storage requests that changed something, and snapshots.

The embedded moto keeps everything in memory. To survive a restart (or a SIGKILL), every request that
changed something is appended to a journal and flushed to disk (fdatasync) before moto's answer leaves
the storage lock, so a write the service acknowledged is on disk, and a transaction is one record: all of
it or none. At start the newest snapshot is loaded and the journal after it replayed through moto itself,
in the order the requests were applied; since moto is deterministic for the same state and request, the
replay rebuilds the same state (each replayed request must answer as it did, or the folder is damaged).
When the journal outgrows the snapshot it is compacted: moto's tables and buckets are written out as a
new snapshot (items and objects, not requests) and a new, empty journal starts beside it.

Layout of the folder (`FORMAT` is its version; a newer one is refused, never rewritten):

    format.json         {"format": 1}
    lock                held (flock) by the one server using the folder
    operator-key        the operator key, 0600, unless AGENT_MEMORY_OPERATOR_KEY sets one
    state-<gen>.snap    the state at generation <gen>
    journal-<gen>.log   the requests applied since that snapshot

Both files are a header (magic, format) and records: 4-byte length, 4-byte CRC-32, then the payload,
whose first byte says its kind. A record cut short at the end of the journal is what a power cut
leaves: it is dropped with a log line. Any other damage stops the start with a sentence naming the file
and `--repair`, which keeps everything before the damage and moves the rest aside.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import io
import json
import logging
import os
import secrets
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("agent_memory_sdk.local")

FORMAT = 1
MAGIC = b"AGMEMLOG"
_HEADER = MAGIC + struct.pack(">I", FORMAT)
_FRAME = struct.Struct(">II")
# A record is one request (a transaction carries at most 100 items of 400 KB): far below this.
MAX_RECORD = 256 * 1024 * 1024
# The journal is compacted once it is larger than this and larger than the last snapshot, so the cost
# of a snapshot is spread over at least as many bytes of journal (and a restart replays at most this).
COMPACT_MIN_BYTES = 16 * 1024 * 1024
ITEMS_PER_RECORD = 500

REQUEST, TABLE, ITEMS, BUCKET, OBJECT, END = b"R", b"T", b"I", b"B", b"O", b"E"

# DynamoDB operations that change nothing; every other one is journaled when it succeeds.
_DYNAMODB_READS = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "TransactGetItems",
        "DescribeTable",
        "ListTables",
        "DescribeTimeToLive",
        "DescribeContinuousBackups",
        "ListTagsOfResource",
        "DescribeEndpoints",
        "DescribeLimits",
        "ExecuteStatement",
    }
)
# The request headers moto reads to route and apply a change (service, target, S3 conditions and
# metadata); the rest (user agent, SDK retry counters, dates) would only make the journal larger.
_KEPT_HEADERS = (
    "HTTP_HOST",
    "HTTP_AUTHORIZATION",
    "HTTP_X_AMZ_TARGET",
    "CONTENT_TYPE",
    "HTTP_CONTENT_MD5",
    # moto matches S3 keys against the path as it arrived (an encoded slash stays one)
    "RAW_URI",
    "REQUEST_URI",
)
_KEPT_PREFIXES = ("HTTP_X_AMZ_", "HTTP_IF_", "HTTP_CONTENT_ENCODING", "HTTP_CACHE_CONTROL")


class DataDirError(RuntimeError):
    """The data folder cannot be used as it is; the message says why and what to do."""


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


# --- records ---------------------------------------------------------------------------------------------


def _frame(kind: bytes, body: bytes) -> bytes:
    payload = kind + body
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def _json_record(kind: bytes, doc: dict[str, Any], tail: bytes = b"") -> bytes:
    head = json.dumps(doc, separators=(",", ":")).encode()
    return _frame(kind, struct.pack(">I", len(head)) + head + tail)


def _split(body: bytes) -> tuple[dict[str, Any], bytes]:
    (n,) = struct.unpack_from(">I", body)
    doc = json.loads(body[4 : 4 + n])
    if not isinstance(doc, dict):
        raise ValueError("record header is not an object")
    return doc, body[4 + n :]


@dataclass
class Damage:
    """Where a file stops being readable, and why."""

    path: Path
    offset: int
    size: int
    reason: str


@dataclass
class Scan:
    records: list[tuple[int, bytes, bytes]] = field(default_factory=list)  # (offset, kind, body)
    good_end: int = 0
    torn: int = 0  # bytes of a record cut short at the very end
    damage: Damage | None = None


def read_records(path: Path) -> Scan:
    """Every whole record of a file, stopping at the first damage (a short tail is `torn`, not damage)."""
    data = path.read_bytes()
    scan = Scan()
    if len(data) < len(_HEADER) and _HEADER.startswith(data):
        scan.torn = len(data)  # the header itself was being written
        return scan
    if data[: len(MAGIC)] != MAGIC:
        scan.damage = Damage(path, 0, len(data), "it does not start like an agent-memory data file")
        return scan
    (version,) = struct.unpack_from(">I", data, len(MAGIC))
    if version != FORMAT:
        raise DataDirError(
            f"{path} was written in data format {version}, and this agent-memory reads format {FORMAT}. "
            "Run the agent-memory that wrote it, or start this one on another --data-dir."
        )
    pos = len(_HEADER)
    while pos < len(data):
        if len(data) - pos < _FRAME.size:
            scan.torn = len(data) - pos
            break
        length, crc = _FRAME.unpack_from(data, pos)
        if length == 0 or length > MAX_RECORD:
            scan.damage = Damage(path, pos, len(data) - pos, f"a record at byte {pos} has an impossible length")
            break
        end = pos + _FRAME.size + length
        if end > len(data):
            scan.torn = len(data) - pos
            break
        payload = data[pos + _FRAME.size : end]
        if zlib.crc32(payload) != crc:
            scan.damage = Damage(path, pos, len(data) - pos, f"the record at byte {pos} fails its checksum")
            break
        scan.records.append((pos, payload[:1], payload[1:]))
        pos = end
    scan.good_end = scan.damage.offset if scan.damage else pos
    return scan


# --- requests ---------------------------------------------------------------------------------------------


def is_change(environ: dict[str, Any]) -> bool:
    """Whether a storage request may change state (and so belongs in the journal when it succeeds)."""
    method = environ.get("REQUEST_METHOD", "GET")
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return str(target).rpartition(".")[2] not in _DYNAMODB_READS
    return method not in ("GET", "HEAD", "OPTIONS")


def request_record(environ: dict[str, Any], body: bytes, status: int) -> bytes:
    headers = {
        k: v for k, v in environ.items() if isinstance(v, str) and (k in _KEPT_HEADERS or k.startswith(_KEPT_PREFIXES))
    }
    doc = {
        "m": environ.get("REQUEST_METHOD", "GET"),
        "p": environ.get("PATH_INFO", "/"),
        "q": environ.get("QUERY_STRING", ""),
        "h": headers,
        "s": status,
        "t": dt.datetime.now(dt.UTC).isoformat(),
    }
    return _json_record(REQUEST, doc, body)


def _environ(doc: dict[str, Any], body: bytes) -> dict[str, Any]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": doc["m"],
        "PATH_INFO": doc["p"],
        "QUERY_STRING": doc["q"],
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "0",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    environ.update(doc["h"])
    return environ


def call(app: WSGIApp, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """Run one WSGI request to completion: (status, headers, body)."""
    answer: list[Any] = []

    def start_response(line: str, headers: Any, exc_info: Any = None) -> Callable[[bytes], None]:
        answer[:] = [int(line.split(" ", 1)[0]), list(headers)]
        return lambda _chunk: None

    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = answer or (500, [])
    return status, headers, body


@contextlib.contextmanager
def _clock_at(when: str) -> Iterator[None]:
    """moto's S3 stamps LastModified with the time it applies a change: replay the original time."""
    import moto.s3.models as s3_models

    moment = dt.datetime.fromisoformat(when).replace(tzinfo=None)
    original = getattr(s3_models, "utcnow")  # noqa: B009 - moto does not export it
    setattr(s3_models, "utcnow", lambda: moment)  # noqa: B010
    try:
        yield
    finally:
        setattr(s3_models, "utcnow", original)  # noqa: B010


# --- snapshots --------------------------------------------------------------------------------------------


def _snapshot_records() -> Iterator[bytes]:
    """moto's DynamoDB tables and S3 buckets as records (the caller holds the storage lock)."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.s3.models import s3_backends

    # moto's own types stop at its backends' dicts; the records are built from what they hold.
    ddb_backends: Any = dynamodb_backends
    buckets_backends: Any = s3_backends
    for account, regions in list(ddb_backends.items()):
        for region, backend in list(regions.items()):
            for name, table in list(backend.tables.items()):
                yield _json_record(
                    TABLE,
                    {
                        "account": account,
                        "region": region,
                        "name": name,
                        "schema": table.schema,
                        "attr": table.attr,
                        "billing": table.billing_mode,
                        "ttl": table.ttl,
                        "gsi": [
                            {"IndexName": i.name, "KeySchema": i.schema, "Projection": i.projection}
                            for i in table.global_indexes or []
                        ],
                        "lsi": [
                            {"IndexName": i.name, "KeySchema": i.schema, "Projection": i.projection}
                            for i in table.indexes or []
                        ],
                    },
                )
                batch: list[dict[str, Any]] = []
                for partition in list(table.items.values()):
                    for item in list(partition.values()) if table.range_key_attr else [partition]:
                        batch.append(item.to_json()["Attributes"])
                        if len(batch) == ITEMS_PER_RECORD:
                            yield _json_record(
                                ITEMS, {"account": account, "region": region, "table": name, "items": batch}
                            )
                            batch = []
                if batch:
                    yield _json_record(ITEMS, {"account": account, "region": region, "table": name, "items": batch})
    for account, partitions in list(buckets_backends.items()):
        for partition, backend in list(partitions.items()):
            for name, bucket in list(backend.buckets.items()):
                yield _json_record(
                    BUCKET, {"account": account, "partition": partition, "name": name, "region": bucket.region_name}
                )
                for key in list(bucket.keys.values()):
                    if not hasattr(key, "value"):
                        continue  # a delete marker: versioning is off here, so there is none to keep
                    yield _json_record(
                        OBJECT,
                        {
                            "account": account,
                            "partition": partition,
                            "bucket": name,
                            "key": key.name,
                            "metadata": dict(key.metadata),
                            "modified": key.last_modified.isoformat(),
                            "storage": key.storage_class,
                            "checksum": [key.checksum_algorithm, key.checksum_value],
                        },
                        key.value,
                    )
    yield _frame(END, b"")


def _load_snapshot_record(kind: bytes, body: bytes) -> None:
    from moto.dynamodb.models import dynamodb_backends as ddb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType, Item
    from moto.s3.models import s3_backends as buckets_backends
    from moto.utilities.utils import LowercaseDict

    dynamodb_backends: Any = ddb_backends
    s3_backends: Any = buckets_backends
    doc, tail = _split(body)
    if kind == TABLE:
        backend = dynamodb_backends[doc["account"]][doc["region"]]
        backend.create_table(
            doc["name"],
            schema=doc["schema"],
            throughput=None,
            attr=doc["attr"],
            global_indexes=doc["gsi"] or None,
            indexes=doc["lsi"] or None,
            streams=None,
            billing_mode=doc["billing"] or "PAY_PER_REQUEST",
            sse_specification=None,
            tags=[],
            deletion_protection_enabled=False,
            warm_throughput=None,
        )
        backend.tables[doc["name"]].ttl = doc["ttl"]
    elif kind == ITEMS:
        table = dynamodb_backends[doc["account"]][doc["region"]].tables[doc["table"]]
        for attrs in doc["items"]:
            hash_key = DynamoType(attrs[table.hash_key_attr])
            if table.range_key_attr:
                range_key = DynamoType(attrs[table.range_key_attr])
                table.items[hash_key][range_key] = Item(hash_key, range_key, attrs)
            else:
                table.items[hash_key] = Item(hash_key, None, attrs)
    elif kind == BUCKET:
        s3_backends[doc["account"]][doc["partition"]].create_bucket(doc["name"], doc["region"])
    elif kind == OBJECT:
        backend = s3_backends[doc["account"]][doc["partition"]]
        algorithm, value = doc["checksum"]
        key = backend.put_object(
            doc["bucket"], doc["key"], tail, storage=doc["storage"], checksum_value=value, disable_notification=True
        )
        key.checksum_algorithm = algorithm
        key._metadata = LowercaseDict(doc["metadata"])
        key.last_modified = dt.datetime.fromisoformat(doc["modified"])
    else:
        raise ValueError(f"unknown record kind {kind!r}")


def _reset_moto() -> None:
    from moto.core.base_backend import BackendDict

    BackendDict.reset()


# --- the folder -------------------------------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _gen(path: Path) -> int:
    return int(path.name.split("-", 1)[1].split(".", 1)[0])


@dataclass
class OpenReport:
    """What opening the folder found: shown in one log line and by `serve`."""

    generation: int = 0
    snapshot_records: int = 0
    replayed: int = 0
    torn_bytes: int = 0
    dropped: list[str] = field(default_factory=list)  # what --repair moved aside
    seconds: float = 0.0


class DataDir:
    """One server's data folder: locked, loaded into moto, then journaled to as moto changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_fd: int | None = None
        self._journal_fd: int | None = None
        self.generation = 0
        self.journal_bytes = 0
        self.snapshot_bytes = 0
        # A smaller threshold makes compaction happen under a short load (the crash test sets it).
        self.compact_min_bytes = int(os.environ.get("AGENT_MEMORY_JOURNAL_COMPACT_BYTES") or COMPACT_MIN_BYTES)
        # Set when the journal could not be written: from then on every change is refused.
        self.failed: str | None = None

    # The lock is taken before anything in the folder is read, and held until the process ends.
    def lock(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
                raise DataDirError(
                    f"{self.path} is in use by another agent-memory server (pid {holder}). Stop that server, "
                    "or give this one its own folder with --data-dir DIR (or --ephemeral)."
                ) from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def check_format(self) -> None:
        marker = self.path / "format.json"
        if not marker.exists():
            marker.write_text(json.dumps({"format": FORMAT}) + "\n")
            return
        try:
            found = json.loads(marker.read_text())["format"]
        except (ValueError, KeyError, TypeError):
            raise DataDirError(
                f'{marker} is unreadable; it should hold {{"format": {FORMAT}}}. Restore it, or start on '
                "another --data-dir."
            ) from None
        if found != FORMAT:
            raise DataDirError(
                f"{self.path} holds data format {found}, and this agent-memory reads format {FORMAT}. Run the "
                "agent-memory that wrote it, or start this one on another --data-dir."
            )

    def operator_key(self) -> str:
        """The operator key kept with the data (made once, 0600), unless the environment sets one."""
        given = os.environ.get("AGENT_MEMORY_OPERATOR_KEY")
        if given:
            return given
        path = self.path / "operator-key"
        if path.exists():
            return path.read_text().strip()
        key = secrets.token_hex(24)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key + "\n")
        return key

    def _files(self, prefix: str, suffix: str) -> list[Path]:
        return sorted(self.path.glob(f"{prefix}-*{suffix}"), key=_gen)

    def _aside(self, path: Path, offset: int, report: OpenReport) -> None:
        """--repair: move a file's bytes from `offset` on into a file beside it, and keep the rest."""
        data = path.read_bytes()
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
        aside = path.with_name(f"{path.name}.dropped-{stamp}")
        aside.write_bytes(data[offset:])
        with path.open("r+b") as fh:
            fh.truncate(offset)
            fh.flush()
            os.fsync(fh.fileno())
        report.dropped.append(f"{len(data) - offset} bytes of {path.name} from byte {offset} (kept in {aside.name})")

    def load(self, app: WSGIApp, repair: bool = False) -> OpenReport:
        """Rebuild moto's state from the newest snapshot and its journal; then journal from there on."""
        report = OpenReport()
        for tmp in self.path.glob("*.tmp"):
            tmp.unlink()  # a compaction that did not finish; the files it would have replaced are intact
        snapshots = self._files("state", ".snap")
        self.generation = _gen(snapshots[-1]) if snapshots else 0
        report.generation = self.generation
        # A crash between a compaction's rename and its clean-up leaves the generation before behind.
        for stale in [*snapshots[:-1], *self._files("journal", ".log")]:
            if _gen(stale) < self.generation:
                stale.unlink()
        repair_hint = "; start with --repair to keep everything before it and move the rest aside"
        if snapshots:
            snap = snapshots[-1]
            scan = read_records(snap)
            complete = bool(scan.records) and scan.records[-1][1] == END and not scan.torn
            if scan.damage or not complete:
                reason = scan.damage.reason if scan.damage else "it ends before its last record"
                if not repair:
                    raise DataDirError(f"{snap} is damaged ({reason}){repair_hint}.")
                self._aside(snap, scan.good_end, report)
            for _, kind, body in scan.records:
                if kind != END:
                    _load_snapshot_record(kind, body)
                    report.snapshot_records += 1
            self.snapshot_bytes = snap.stat().st_size
        journal = self.path / f"journal-{self.generation}.log"
        failed = 0
        if journal.exists():
            scan = read_records(journal)
            if scan.damage:
                if not repair:
                    raise DataDirError(f"{journal} is damaged ({scan.damage.reason}){repair_hint}.")
                self._aside(journal, scan.damage.offset, report)
            for offset, kind, body in scan.records:
                doc, payload = _split(body) if kind == REQUEST else ({}, b"")
                if kind != REQUEST:
                    if not repair:
                        raise DataDirError(f"{journal} is damaged (byte {offset} holds no request){repair_hint}.")
                    continue
                with _clock_at(doc["t"]):
                    status, _, _ = call(app, _environ(doc, payload))
                if status != doc["s"]:
                    if not repair:
                        raise DataDirError(
                            f"{journal} does not match its snapshot: the request at byte {offset} answered "
                            f"{status} on replay where it answered {doc['s']}{repair_hint}."
                        )
                    failed += 1
                report.replayed += 1
            if scan.torn:
                log.warning(
                    "agent-memory: dropped a record cut short at the end of %s (%d bytes): it was never acknowledged",
                    journal,
                    scan.torn,
                )
                report.torn_bytes = scan.torn
                with journal.open("r+b") as fh:
                    fh.truncate(scan.good_end)
        if failed:
            report.dropped.append(f"{failed} journaled requests that no longer apply to the repaired state")
        self._open_journal(journal)
        if (repair and report.dropped) or self._outgrown():
            # Now rather than on the first write: start-up is where a wait is expected.
            self.compact()
        return report

    def _outgrown(self) -> bool:
        return self.journal_bytes > max(self.compact_min_bytes, self.snapshot_bytes)

    def _open_journal(self, journal: Path) -> None:
        fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if os.fstat(fd).st_size < len(_HEADER):
            os.ftruncate(fd, 0)
            os.write(fd, _HEADER)
            os.fsync(fd)
            _fsync_dir(self.path)
        self._journal_fd = fd
        self.journal_bytes = os.fstat(fd).st_size

    def record(self, environ: dict[str, Any], body: bytes, status: int) -> bool:
        """Journal one applied change (the caller holds the storage lock); False when it could not be."""
        try:
            if environ.get("PATH_INFO") == "/moto-api/reset":
                self.reset()
            else:
                self.append(request_record(environ, body, status))
        except OSError as exc:
            self.failed = (
                f"the data folder {self.path} cannot be written ({exc.strerror or exc}); the last change is "
                "not kept and no further change is accepted. Free the disk and restart the server."
            )
            log.error("agent-memory: %s", self.failed)
            return False
        return True

    def append(self, record: bytes) -> None:
        """One record on disk before the request that made it is answered (the caller holds the lock)."""
        assert self._journal_fd is not None
        os.write(self._journal_fd, record)
        os.fdatasync(self._journal_fd)
        self.journal_bytes += len(record)
        if self._outgrown():
            self.compact()

    def compact(self) -> None:
        """Write the whole state as generation+1 and start its empty journal (the caller holds the lock)."""
        nxt = self.generation + 1
        tmp = self.path / f"state-{nxt}.snap.tmp"
        size = 0
        with tmp.open("wb") as fh:
            fh.write(_HEADER)
            for record in _snapshot_records():
                fh.write(record)
                size += len(record)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.rename(self.path / f"state-{nxt}.snap")
        _fsync_dir(self.path)
        old_fd, old = self._journal_fd, self.generation
        self.generation, self.snapshot_bytes = nxt, size
        self._open_journal(self.path / f"journal-{nxt}.log")
        if old_fd is not None:
            os.close(old_fd)
        for path in (self.path / f"journal-{old}.log", self.path / f"state-{old}.snap"):
            path.unlink(missing_ok=True)

    def reset(self) -> None:
        """Storage emptied on purpose (moto's reset): the folder starts again from an empty state."""
        self.compact()

    def close(self) -> None:
        for fd in (self._journal_fd, self._lock_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._journal_fd = self._lock_fd = None


def open_data_dir(path: Path, app: WSGIApp, repair: bool = False) -> tuple[DataDir, OpenReport]:
    data = DataDir(path)
    data.lock()
    try:
        data.check_format()
        _reset_moto()
        started = time.monotonic()
        report = data.load(app, repair=repair)
        report.seconds = time.monotonic() - started
    except BaseException:
        data.close()
        raise
    return data, report


__all__ = ["DataDir", "DataDirError", "OpenReport", "call", "is_change", "open_data_dir", "request_record"]
