"""`agent-memory mount` and `agent-memory sync`: a session's mounts as real files in a directory.

`mount` reads an execution's manifest and materialises every mount under DIR (`/workspace/runbooks/a.md`
at `DIR/workspace/runbooks/a.md`, `/memory/agent/notes.md` at `DIR/memory/agent/notes.md`); `sync` pushes
what changed under the read-write mounts and pulls what others changed. It speaks only HTTP, through the
standard-library client, with the principal's token, so it runs in any pod.

Every file is judged three ways: its bytes on disk, the version it was last pulled or pushed at (the state
in `DIR/.agent-memory/`), and the version the service lists now. Only one side moved: that side wins. Both
moved to different bytes: a conflict, which never clobbers: the local file stays, the service's version is
written beside it as `NAME.remote`, and `--keep-local` settles it on purpose. Every push is the seed's
conditional write on the pulled pair, so a version someone wrote meanwhile is refused, never overwritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory_sdk.client import (
    MemoryApiError,
    MemoryClient,
    MemoryClientError,
    MemoryConnectionError,
    MemoryLeased,
    MemoryNotFound,
    StaleObject,
)

STATE_DIR = ".agent-memory"
STATE_FILE = "state.json"
LOCK_FILE = "lock"
STATE_FORMAT = 1
REMOTE_SUFFIX = ".remote"
# A pull writes beside its target and renames, so a reader never sees half a file; the walk skips these.
TMP_SUFFIX = ".agent-memory-tmp"
# The service's own bounds (a Memory file is at most 1 MiB and a Memory holds at most 1000 files): a local
# file or folder past them could never be pushed, so it is reported rather than read whole.
MAX_FILE_BYTES = 1024 * 1024
MAX_LOCAL_FILES = 1000
# Long enough for one file's lease, read and write; shortened to a second once the push is done, so a
# finished push keeps no one else waiting.
LEASE_SECONDS = 15
READONLY_FILE = 0o444
READONLY_DIR = 0o555
WRITABLE_DIR = 0o755


class MountError(Exception):
    """A local problem that stops a mount or a sync: no state, a directory in the way, a bad manifest."""


# ---- the report ------------------------------------------------------------------------------------------


@dataclass
class Report:
    """What one mount or sync did, as the CLI prints it."""

    execution_id: str | None = None
    pulled: list[dict[str, Any]] = field(default_factory=list)
    pushed: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    readonly_changes: list[dict[str, Any]] = field(default_factory=list)
    # Local files under a read-write mount that cannot be pushed as they are (not UTF-8, too large, not a
    # regular file, leased by someone else): left unpushed, like a conflict, but nothing to resolve.
    skipped: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def error(self, path: str | None, exc: BaseException) -> None:
        if isinstance(exc, MemoryApiError):
            code = exc.code
        else:
            code = "connection_failed" if isinstance(exc, MemoryConnectionError) else "local_error"
        entry: dict[str, Any] = {"code": code, "message": str(exc)}
        self.errors.append(entry if path is None else {"path": path, **entry})

    @property
    def status(self) -> int:
        """sync's exit status: 0 in sync, 1 when something was left unpushed, 2 on an error."""
        if self.errors:
            return 2
        return 1 if self.conflicts or self.readonly_changes or self.skipped else 0

    @property
    def mount_status(self) -> int:
        """mount's exit status: 0, or 2 on an error."""
        return 2 if self.errors else 0

    @property
    def eventful(self) -> bool:
        """Whether anything happened or is pending: what `mount --watch` prints a line for."""
        return any((self.pulled, self.pushed, self.conflicts, self.readonly_changes, self.skipped, self.errors))

    def as_json(self) -> dict[str, Any]:
        return {
            "execution_id": self.execution_id,
            "pulled": self.pulled,
            "pushed": self.pushed,
            "conflicts": self.conflicts,
            "readonly_changes": self.readonly_changes,
            "skipped": self.skipped,
            "errors": self.errors,
        }


# ---- the manifest and the state --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MountPoint:
    path: str
    kind: str
    mode: str
    source: str
    memory_id: str | None

    @property
    def writable(self) -> bool:
        # The manifest already says readonly for a git-synced Memory; the source is checked too so a
        # manifest from an older server cannot make one look writable.
        return self.mode == "readwrite" and self.source != "git"

    def contains(self, path: str) -> bool:
        return path.startswith(self.path + "/")

    def relative(self, path: str) -> str:
        return path[len(self.path) + 1 :]


@dataclass(frozen=True, slots=True)
class Version:
    """A file's version: its pair, and the sha256 of its bytes."""

    public_id: str
    lock_version: int
    sha256: str

    @property
    def pair(self) -> tuple[str, int]:
        return self.public_id, self.lock_version

    def as_json(self) -> dict[str, Any]:
        return {"public_id": self.public_id, "lock_version": self.lock_version, "sha256": self.sha256}

    @staticmethod
    def of(row: Any) -> Version:
        if not isinstance(row, dict):
            raise MountError("a file version must be an object")
        public_id, lock_version = row.get("public_id"), row.get("lock_version")
        sha = row.get("sha256", row.get("content_sha256"))
        if not isinstance(public_id, str) or not isinstance(lock_version, int) or not isinstance(sha, str):
            raise MountError(f"a file version needs public_id, lock_version and sha256: {str(row)[:200]}")
        return Version(public_id, lock_version, sha)


@dataclass
class State:
    """DIR/.agent-memory/state.json: the execution, its manifest, and each file's version as last pulled or
    pushed (the base a change is judged against); `remotes` are the service's versions written beside a
    conflicted file as NAME.remote."""

    execution_id: str
    manifest: list[dict[str, Any]]
    files: dict[str, Version] = field(default_factory=dict)
    remotes: dict[str, Version] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "execution_id": self.execution_id,
            "mounts": self.manifest,
            "files": [{"path": p, **v.as_json()} for p, v in sorted(self.files.items())],
            "remotes": [{"path": p, **v.as_json()} for p, v in sorted(self.remotes.items())],
        }

    @staticmethod
    def of(data: Any) -> State:
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise MountError(f"{STATE_DIR}/{STATE_FILE} is not a state this version of agent-memory wrote")
        execution_id, manifest = data.get("execution_id"), data.get("mounts")
        if not isinstance(execution_id, str) or not isinstance(manifest, list):
            raise MountError(f"{STATE_DIR}/{STATE_FILE} lacks its execution_id or mounts")

        def versions(rows: Any) -> dict[str, Version]:
            if not isinstance(rows, list):
                raise MountError(f"{STATE_DIR}/{STATE_FILE} is malformed")
            return {str(r.get("path")): Version.of(r) for r in rows if isinstance(r, dict)}

        return State(execution_id, manifest, versions(data.get("files")), versions(data.get("remotes")))


def _segments(path: str) -> list[str]:
    """The segments of an absolute, normalised path; anything that could climb out of DIR is refused."""
    if not path.startswith("/"):
        raise MountError(f"{path[:200]!r} is not an absolute path")
    parts = path[1:].split("/")
    for part in parts:
        if part in ("", ".", "..") or "\x00" in part:
            raise MountError(f"{path[:200]!r} is not a normalised path")
    return parts


def mount_points(manifest: list[dict[str, Any]]) -> list[MountPoint]:
    out = []
    for row in manifest:
        if not isinstance(row, dict) or not isinstance(row.get("path"), str):
            raise MountError(f"the manifest holds a mount without a path: {str(row)[:200]}")
        path = row["path"]
        segments = _segments(path)
        if segments[0] == STATE_DIR:
            raise MountError(f"the mount {path!r} would land in {STATE_DIR}/, which is the mount client's own")
        out.append(
            MountPoint(
                path,
                str(row.get("kind")),
                str(row.get("mode", "readonly")),
                str(row.get("source", "native")),
                row.get("memory_id") if isinstance(row.get("memory_id"), str) else None,
            )
        )
    return out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _state_path(root: Path) -> Path:
    return root / STATE_DIR / STATE_FILE


def _load(root: Path) -> State:
    try:
        raw = _state_path(root).read_text("utf-8")
    except FileNotFoundError:
        raise MountError(f"{root} is not mounted (no {STATE_DIR}/{STATE_FILE}): run agent-memory mount first") from None
    try:
        return State.of(json.loads(raw))
    except ValueError as exc:
        raise MountError(f"{STATE_DIR}/{STATE_FILE} is not JSON: {exc}") from None


def _save(root: Path, state: State) -> None:
    target = _state_path(root)
    tmp = target.with_name(STATE_FILE + TMP_SUFFIX)
    tmp.write_text(json.dumps(state.as_json(), indent=1, sort_keys=True) + "\n", "utf-8")
    os.replace(tmp, target)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One mount or sync at a time per DIR: a watch loop and a manual sync would otherwise race on the state."""
    with open(root / STATE_DIR / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# ---- local files -----------------------------------------------------------------------------------------


class Unpushable(Exception):
    """A local file that is not what a Memory file can be (a regular file of at most 1 MiB)."""


def _read_local(path: Path) -> bytes | None:
    """The bytes at `path`, None when absent. A symlink is never followed: it could name anything on disk."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None  # a parent is a file now: the path holds nothing
    if not path.is_file() or path.is_symlink():
        raise Unpushable("not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise Unpushable(f"larger than {MAX_FILE_BYTES} bytes, the most a file holds")
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise Unpushable(f"larger than {MAX_FILE_BYTES} bytes, the most a file holds")
    return data


def _ignored(name: str) -> bool:
    return name.endswith(REMOTE_SUFFIX) or name.endswith(TMP_SUFFIX)


# ---- one run ---------------------------------------------------------------------------------------------


class _Run:
    """One mount or sync of DIR: the client, the state, and the report being written."""

    def __init__(self, client: MemoryClient, root: Path, state: State, report: Report) -> None:
        self.client, self.root, self.state, self.report = client, root, state, report
        self.mounts = mount_points(state.manifest)
        self.execution_id = state.execution_id
        # Read-write mounts whose folder is gone (nothing under them is synced), and files whose local side
        # this run left as it was (a conflict, a refusal): the pull after the pushes leaves those alone.
        self.blocked: set[str] = set()
        self.kept: set[str] = set()

    # ---- paths ----

    def local(self, path: str) -> Path:
        return self.root.joinpath(*_segments(path))

    def shown(self, path: str) -> str:
        """A session path as the disk names it, relative to DIR."""
        return "/".join(_segments(path))

    def mount_of(self, path: str) -> MountPoint | None:
        return max((m for m in self.mounts if m.contains(path)), key=lambda m: len(m.path), default=None)

    def absolute(self, local: Path) -> str:
        return "/" + "/".join(local.relative_to(self.root).parts)

    # ---- the service ----

    def listing(self) -> dict[str, Version]:
        """Every file of every mount, with its pair and its bytes' sha256: one request."""
        if not self.mounts:
            return {}
        rows = self.client.routes.execution_files_list(
            execution_public_id=self.execution_id, body={"file": {"path": "/"}}
        )["files"]
        out: dict[str, Version] = {}
        for row in rows:
            path = row.get("path") if isinstance(row, dict) else None
            if isinstance(path, str) and self.mount_of(path) is not None:
                out[path] = Version.of(row)
        return out

    def show(self, path: str) -> tuple[Version, str] | None:
        try:
            f = self.client.routes.execution_file_show(
                execution_public_id=self.execution_id, body={"file": {"path": path}}
            )["file"]
        except MemoryNotFound:
            return None
        content = f["content"]
        return Version(f["public_id"], f["lock_version"], _sha(content.encode("utf-8"))), content

    def write(self, path: str, text: str, expected: tuple[str, int] | None, *, overwrite: bool = False) -> Version:
        body: dict[str, Any] = {
            "path": path,
            "content": text,
            "expected_public_id": None if expected is None else expected[0],
            "expected_lock_version": None if expected is None else expected[1],
        }
        if overwrite:
            body["conflict_resolution"] = "overwrite"
        f = self.client.routes.execution_file_write(execution_public_id=self.execution_id, body={"file": body})["file"]
        return Version(f["public_id"], f["lock_version"], _sha(text.encode("utf-8")))

    def delete(self, path: str, expected: tuple[str, int]) -> None:
        body = {"path": path, "expected_public_id": expected[0], "expected_lock_version": expected[1]}
        self.client.routes.execution_file_delete(execution_public_id=self.execution_id, body={"file": body})

    @contextlib.contextmanager
    def leased(self, m: MountPoint, path: str) -> Iterator[None]:
        """A lease on a Memory's file while it is pushed, so no one else's write lands between our read of
        the current version and our write. agent/ and user/ documents have no leases."""
        if m.kind != "memory" or m.memory_id is None:
            yield
            return
        files = self.client.memory_files(m.memory_id)
        rel = m.relative(path)
        files.lease(rel, LEASE_SECONDS)
        try:
            yield
        finally:
            # Best effort: an unreleased lease still ends by itself within LEASE_SECONDS.
            with contextlib.suppress(MemoryClientError):
                files.lease(rel, 1)

    # ---- disk ----

    def _open_dirs(self, m: MountPoint, target: Path) -> None:
        """Let a pull change a read-only mount: its folders from the mount down to `target` get their write
        bit back until `seal` takes it away again."""
        if m.writable:
            return
        top = self.local(m.path)
        d = target.parent
        while d == top or top in d.parents:
            if d.is_dir() and not d.is_symlink():
                d.chmod(WRITABLE_DIR)
            d = d.parent

    def put(self, m: MountPoint, path: Path, data: bytes) -> None:
        self._open_dirs(m, path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + TMP_SUFFIX)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def remove(self, m: MountPoint, path: Path) -> None:
        self._open_dirs(m, path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        # Folders a deletion left empty go too, up to (not including) the mount itself.
        top = self.local(m.path)
        parent = path.parent
        while parent != top and top in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def seal(self) -> None:
        """A read-only mount's files and folders lose every write bit, so a runtime's tools see them as such."""
        for m in self.mounts:
            if m.writable:
                continue
            top = self.local(m.path)
            if not top.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(top, topdown=False):
                for name in filenames:
                    p = Path(dirpath, name)
                    if not p.is_symlink():
                        p.chmod(READONLY_FILE)
                for name in dirnames:
                    p = Path(dirpath, name)
                    if not p.is_symlink():
                        p.chmod(READONLY_DIR)
            top.chmod(READONLY_DIR)

    def walk(self) -> set[str]:
        """The files on disk under every mount (not `.remote` files, not a pull's temporary files)."""
        found: set[str] = set()
        for m in self.mounts:
            top = self.local(m.path)
            if not top.is_dir():
                continue
            count = 0
            for dirpath, dirnames, filenames in os.walk(top):
                for name in [*filenames, *(d for d in dirnames if Path(dirpath, d).is_symlink())]:
                    if _ignored(name):
                        continue
                    count += 1
                    if count > MAX_LOCAL_FILES:
                        raise MountError(f"{self.shown(m.path)} holds more than {MAX_LOCAL_FILES} files")
                    found.add(self.absolute(Path(dirpath, name)))
        return found

    # ---- reconciling one file ----

    def clear_remote(self, path: str) -> None:
        """A conflict is over: the NAME.remote this client wrote goes."""
        if self.state.remotes.pop(path, None) is not None:
            m = self.mount_of(path)
            target = self.local(path + REMOTE_SUFFIX)
            if m is not None:
                self._open_dirs(m, target)
            with contextlib.suppress(FileNotFoundError):
                target.unlink()

    def adopt(self, path: str, version: Version) -> None:
        self.state.files[path] = version
        self.clear_remote(path)

    def forget(self, path: str) -> None:
        self.state.files.pop(path, None)
        self.clear_remote(path)

    def write_remote(self, m: MountPoint, path: str, version: Version, content: str) -> str:
        """The service's version beside the local file, as NAME.remote; answers its path on disk."""
        target = self.local(path + REMOTE_SUFFIX)
        if self.state.remotes.get(path) != version or not target.exists():
            self.put(m, target, content.encode("utf-8"))
            self.state.remotes[path] = version
        return self.shown(path + REMOTE_SUFFIX)

    def conflict(self, m: MountPoint, path: str, data: bytes | None) -> None:
        """The file changed here and on the service: read the service's version and keep both."""
        current = self.show(path)
        if current is None:
            if data is None:
                self.forget(path)  # deleted on both sides
                return
            self.clear_remote(path)
            self.report.conflicts.append(
                {
                    "path": path,
                    "local": self.shown(path),
                    "remote": None,
                    "reason": "changed here and deleted on the service: --keep-local writes it back",
                }
            )
            return
        version, content = current
        if data is None:
            # Deleting an older version would lose the newer one: it comes back, and the deletion is
            # left for a sync that sees the current version (unless a file was made there meanwhile).
            if not self.local(path).exists():
                self.put(m, self.local(path), content.encode("utf-8"))
                self.adopt(path, version)
            self.report.conflicts.append(
                {
                    "path": path,
                    "local": self.shown(path),
                    "remote": None,
                    "reason": "deleted here and changed on the service: the service's version is back",
                }
            )
            return
        if _sha(data) == version.sha256:
            self.adopt(path, version)  # both sides made the same change
            return
        remote = self.write_remote(m, path, version, content)
        self.report.conflicts.append(
            {
                "path": path,
                "local": self.shown(path),
                "remote": remote,
                "reason": "changed here and on the service: --keep-local PATH keeps this side",
            }
        )

    def push(self, m: MountPoint, path: str, base: Version | None, data: bytes | None) -> None:
        text = None
        if data is not None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                self.report.skipped.append({"path": path, "reason": "not UTF-8 text: only text files are pushed"})
                return
        try:
            with self.leased(m, path):
                try:
                    if text is None:
                        assert base is not None  # a deletion is of a file pulled before
                        self.delete(path, base.pair)
                        self.forget(path)
                        self.report.pushed.append({"path": path, "operation": "delete"})
                    else:
                        version = self.write(path, text, None if base is None else base.pair)
                        self.adopt(path, version)
                        operation = "create" if base is None else "write"
                        self.report.pushed.append(
                            {"path": path, "operation": operation, "lock_version": version.lock_version}
                        )
                except (StaleObject, MemoryNotFound):
                    # Someone wrote (or deleted) it since the listing: the same as a conflict seen up front.
                    self.conflict(m, path, data)
        except MemoryLeased as exc:
            self.report.skipped.append({"path": path, "reason": f"leased by someone else: {exc.message}"})

    def keep_local(self, target: str) -> None:
        """Settle a conflict for the local side: write it over the service's current version, on purpose
        (conflict_resolution overwrite, which the version records), or delete it when the local file is gone."""
        path = self._session_path(target)
        if path.endswith(REMOTE_SUFFIX):
            raise MountError(f"{target!r} is the service's side of a conflict: name the local file, without .remote")
        m = self.mount_of(path)
        if m is None or not m.writable:
            raise MountError(f"{target!r} is not under a read-write mount: nothing there is pushed")
        base = self.state.files.get(path)
        try:
            data = _read_local(self.local(path))
            text = None if data is None else data.decode("utf-8")
        except (Unpushable, UnicodeDecodeError) as exc:
            reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
            raise MountError(f"{target!r} cannot be pushed: {reason}") from None
        with self.leased(m, path):
            current = self.show(path)
            if data is None or text is None:
                if current is not None:
                    self.delete(path, current[0].pair)
                    self.report.pushed.append({"path": path, "operation": "delete"})
                self.forget(path)
                return
            if current is not None and current[0].sha256 == _sha(data):
                self.adopt(path, current[0])
                return
            now = None if current is None else current[0].pair
            # Only a version the local copy never saw is overwritten: then the write says so.
            raced = now != (None if base is None else base.pair)
            version = self.write(path, text, now, overwrite=raced)
            self.adopt(path, version)
            self.report.pushed.append(
                {
                    "path": path,
                    "operation": "create" if now is None else "write",
                    "lock_version": version.lock_version,
                    "overwrote_concurrent_edit": raced,
                }
            )

    def _session_path(self, target: str) -> str:
        """PATH as on disk (relative to DIR or absolute) as the session names it."""
        p = Path(target)
        root = Path(os.path.normpath(self.root.absolute()))
        full = Path(os.path.normpath(p if p.is_absolute() else root / p))
        if root not in full.parents:
            raise MountError(f"{target!r} is not inside {self.root}")
        return "/" + "/".join(full.relative_to(root).parts)

    # ---- the whole run ----

    def run(self, keep_local: str | None = None) -> None:
        for m in self.mounts:
            top = self.local(m.path)
            if top.is_dir():
                continue
            if m.writable and any(m.contains(p) for p in self.state.files):
                # A read-write mount's whole folder gone is far likelier an accident (a fresh volume, a
                # wrong DIR) than a wish to delete every file of it on the service.
                self.blocked.add(m.path)
                self.report.errors.append(
                    {
                        "path": m.path,
                        "code": "local_error",
                        "message": f"the folder {self.shown(m.path)} is gone: nothing under it is pushed or "
                        "deleted; create it again (its files as you want them) to sync it",
                    }
                )
            else:
                top.mkdir(parents=True)
        try:
            if keep_local is not None:
                self.keep_local(keep_local)
            self._reconcile()
        finally:
            self.seal()

    def _each(self, paths: list[str], act: Callable[[MountPoint, str], None]) -> None:
        """`act` on every path within a mount that can be synced; one file's refusal does not stop the rest."""
        for path in paths:
            m = self.mount_of(path)
            if m is None or m.path in self.blocked:
                continue
            try:
                act(m, path)
            except MemoryConnectionError:
                raise  # the service is out of reach: every other file would fail the same way
            except (MemoryApiError, MountError, OSError) as exc:
                self.report.error(path, exc)
                self.kept.add(path)

    def _reconcile(self) -> None:
        remote = self.listing()
        pulls: set[str] = set()
        pushed = len(self.report.pushed)

        def judge(m: MountPoint, path: str) -> None:
            if self._judge(m, path, self.state.files.get(path), remote.get(path)):
                pulls.add(path)

        self._each(sorted(set(self.state.files) | set(remote) | self.walk()), judge)
        if len(self.report.pushed) > pushed:
            # Our own pushes move the other mounts of the same Memory (/workspace/x and /memory/x): list
            # again, so what they changed is pulled now rather than on the next sync.
            remote = self.listing()
            for path in set(self.state.files) | set(remote):
                base, now = self.state.files.get(path), remote.get(path)
                if (None if base is None else base.pair) != (None if now is None else now.pair):
                    pulls.add(path)
        self._each(sorted(pulls - self.kept), lambda m, path: self.pull(m, path, remote.get(path)))

    def _judge(self, m: MountPoint, path: str, base: Version | None, now: Version | None) -> bool:
        """Push, keep or settle one file; answers whether it is the service's side to pull."""
        try:
            data = _read_local(self.local(path))
        except Unpushable as exc:
            self.kept.add(path)
            if m.writable:
                self.report.skipped.append({"path": path, "reason": str(exc)})
            else:
                self.report.readonly_changes.append({"path": path, "change": "created" if base is None else "modified"})
            return False
        mine = None if data is None else _sha(data)
        local_moved = mine != (None if base is None else base.sha256)
        remote_moved = (None if now is None else now.pair) != (None if base is None else base.pair)
        if not local_moved and not remote_moved:
            return False
        if data is None and now is None:
            self.forget(path)
            return False
        if now is not None and mine == now.sha256:
            self.adopt(path, now)  # the same bytes on both sides, however they got there
            return False
        if not local_moved:
            return True
        if not m.writable:
            change = "created" if base is None else "deleted" if data is None else "modified"
            entry: dict[str, Any] = {"path": path, "change": change}
            self.report.readonly_changes.append(entry)
            if data is None:
                # A read-only file deleted here loses nothing: the service still has it, so it comes back.
                return True
            self.kept.add(path)
            if remote_moved and now is not None:
                current = self.show(path)
                if current is not None:
                    entry["remote"] = self.write_remote(m, path, current[0], current[1])
            return False
        self.kept.add(path)
        if remote_moved:
            self.conflict(m, path, data)
        else:
            self.push(m, path, base, data)
        return False

    def pull(self, m: MountPoint, path: str, now: Version | None) -> None:
        """The service's side of a file this side left alone: written, or removed when deleted there."""
        base = self.state.files.get(path)
        target = self.local(path)
        try:
            data = _read_local(target)
        except Unpushable:
            return
        # Checked again just before the disk changes, so an edit made while this sync ran is never
        # overwritten (a read-only file deleted here is the one local change a pull repairs).
        if (None if data is None else _sha(data)) != (None if base is None else base.sha256) and (
            m.writable or data is not None
        ):
            return
        current = None if now is None else self.show(path)
        if current is None:
            if data is not None:
                self.remove(m, target)
                self.report.pulled.append({"path": path, "operation": "delete"})
            self.forget(path)
            return
        version, content = current
        self.put(m, target, content.encode("utf-8"))
        self.adopt(path, version)
        self.report.pulled.append({"path": path, "operation": "write", "lock_version": version.lock_version})


# ---- the three commands ----------------------------------------------------------------------------------


def _occupied(root: Path, mounts: list[MountPoint]) -> str | None:
    """A mount's folder that already holds something: mount never writes over files it did not pull."""
    for m in mounts:
        top = root.joinpath(*_segments(m.path))
        if top.is_symlink() or (top.exists() and (not top.is_dir() or any(top.iterdir()))):
            return m.path
    return None


def mount(client: MemoryClient, execution_id: str, dir: str | os.PathLike[str]) -> Report:
    """Materialise an execution's mounts under `dir`; `report.mount_status` is the exit status (0 or 2)."""
    root = Path(dir)
    report = Report(execution_id)
    try:
        manifest = client.routes.execution_mounts(execution_public_id=execution_id)["mounts"]
        if not isinstance(manifest, list):
            raise MountError("the manifest's mounts is not a list")
        mounts = mount_points(manifest)
        if (root / STATE_DIR).exists():
            raise MountError(f"{root} is mounted already: run agent-memory sync --dir {root}")
        taken = _occupied(root, mounts)
        if taken is not None:
            raise MountError(f"{root}: the folder for {taken} already holds files, which mount would write over")
        (root / STATE_DIR).mkdir(parents=True)
        state = State(execution_id, manifest)
        _save(root, state)
        with _locked(root):
            try:
                _Run(client, root, state, report).run()
            finally:
                _save(root, state)
    except (MemoryClientError, MountError, OSError) as exc:
        report.error(None, exc)
    return report


def sync(client: MemoryClient, dir: str | os.PathLike[str], keep_local: str | None = None) -> Report:
    """Push what changed under the read-write mounts, then pull what others changed; `report.status` is the
    exit status. `keep_local` (a path as on disk) settles that file's conflict for the local copy first."""
    root = Path(dir)
    report = Report()
    try:
        if not _state_path(root).is_file():
            raise MountError(f"{root} is not mounted (no {STATE_DIR}/{STATE_FILE}): run agent-memory mount first")
        with _locked(root):
            state = _load(root)
            report.execution_id = state.execution_id
            try:
                _Run(client, root, state, report).run(keep_local)
            finally:
                _save(root, state)
    except (MemoryClientError, MountError, OSError) as exc:
        report.error(None, exc)
    return report


def watch(
    client: MemoryClient,
    dir: str | os.PathLike[str],
    *,
    interval: float = 5.0,
    stop: threading.Event,
    on_report: Callable[[Report], None] | None = None,
) -> int:
    """Sync every `interval` seconds until `stop` is set; a failed sync is reported and the next one tried,
    since a service that is briefly out of reach should not end the watch."""
    while not stop.wait(interval):
        report = sync(client, dir)
        if on_report is not None:
            on_report(report)
    return 0
