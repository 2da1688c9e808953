"""Sessions as file trees: the mounts an execution captures when it begins, and its files by absolute path.

A session sees organization Memories it asked for under `/workspace/...`, and the server's own mounts
under `/memory`: `/memory/agent` and `/memory/user` (the agent/ and user/ roots the execution has bound)
and `/memory/<name>` for each Memory its answering agent has by attachment or tenant default. The set is
captured with the execution and never changes: archiving, detaching or changing a default later moves
only the sessions that begin afterwards. Each mount is a root of the same memory verbs (memory.py), so
a write through a mount is the conditional write of every other door.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from agent_memory.api.errors import ApiError
from agent_memory.core import access
from agent_memory.core.access import refuse_override
from agent_memory.core.bindings import Binding
from agent_memory.core.context import Context, Source
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import Anchor, Execution, Located, Mount, MountMode, OrgMemory, mode_respelled
from agent_memory.core.paths import (
    FILES_ROOT,
    MemoryPath,
    lookalike,
    parse_document_path,
    parse_file_path,
    parse_prefix,
    prefix_matches,
)
from agent_memory.core.ports import Ref
from agent_memory.domain.memories.service import MEMORY_ID_RE, Effective
from agent_memory.domain.memory.service import MemoryService

WORKSPACE = "/workspace"
SERVER = "/memory"
MAX_MOUNTS = 32
MAX_MOUNT_PATH = 512
T = TypeVar("T")
_SEGMENT = re.compile(r"^[A-Za-z0-9._~@+=-][A-Za-z0-9._~@+= -]*\Z")


@dataclass(frozen=True, slots=True)
class MountRequest:
    """One configured mount as the request gave it, checked for shape."""

    index: int
    memory_id: str
    path: str
    mode: MountMode


def _fail(message: str) -> ApiError:
    return ApiError("validation_failed", message)


def check_mount_path(value: Any, where: str) -> str:
    """An absolute, normalised path under /workspace (not /workspace itself, nothing under /memory)."""
    if not isinstance(value, str) or not value:
        raise _fail(f"{where} must be an absolute path such as '/workspace/runbooks'.")
    if len(value) > MAX_MOUNT_PATH:
        raise _fail(f"{where} is longer than {MAX_MOUNT_PATH} characters.")
    if not value.startswith("/"):
        raise _fail(f"{where} must be absolute (start with '/'), such as '/workspace/runbooks'.")
    if value == SERVER or value.startswith(SERVER + "/"):
        raise _fail(f"{where} is under /memory, which the server keeps for its own mounts.")
    segments = value[1:].split("/")
    for seg in segments:
        if seg in ("", ".", ".."):
            raise _fail(f"{where} is not normalised: no empty, '.' or '..' segment, and no trailing '/'.")
        why = lookalike(seg)
        if why is not None:
            raise ApiError("memory_path_invalid", f"{where} {value[:200]!r} is not a valid mount path: {why}.")
        if not _SEGMENT.match(seg) or seg != seg.strip():
            raise _fail(f"{where} has a segment {seg[:40]!r} with characters a mount path cannot hold.")
    if value == WORKSPACE:
        raise _fail(f"{where} is /workspace itself: a Memory mounts in a folder under it.")
    if not value.startswith(WORKSPACE + "/"):
        raise _fail(f"{where} must be under /workspace, such as '/workspace/runbooks'.")
    return value


def _only(obj: dict[str, Any], fields: tuple[str, ...], where: str) -> None:
    """No field beyond `fields`: a misspelt one ("Mode") must not quietly fall back to a default."""
    extra = next((k for k in obj if k not in fields), None)
    if extra is not None:
        raise _fail(f"{where} has no field {str(extra)[:40]!r}: it holds {', '.join(fields)}.")


def requested_mounts(capabilities: list[Any] | None) -> list[MountRequest]:
    """The mounts a new execution's `capabilities` ask for, each rule checked before anything is read.

    An empty config, or none at all, mounts nothing. The index in every message is the mount's place in
    the capability's `mounts` list (the memory capability is given once)."""
    if capabilities is None:
        return []
    out: list[MountRequest] = []
    for c, cap in enumerate(capabilities):
        if not isinstance(cap, dict):
            raise _fail(f"capabilities[{c}] must be an object with ref and config.")
        if cap.get("ref") != "memory":
            raise _fail(f"capabilities[{c}].ref must be 'memory', the one capability this service provides.")
        if c:
            # One list of mounts, so that every index a message names is that mount's one place.
            raise _fail(f"capabilities[{c}]: the memory capability is given once, with every mount in its config.")
        _only(cap, ("ref", "config"), f"capabilities[{c}]")
        config = cap.get("config")
        if config is None:
            continue
        if not isinstance(config, dict):
            raise _fail(f'capabilities[{c}].config must be an object such as {{"mounts": [...]}}.')
        _only(config, ("mounts",), f"capabilities[{c}].config")
        mounts = config.get("mounts")
        if mounts is None:
            continue
        if not isinstance(mounts, list):
            raise _fail("mounts must be a list of {memory, path, mode}.")
        if len(out) + len(mounts) > MAX_MOUNTS:
            raise _fail(f"mounts: a session mounts at most {MAX_MOUNTS} Memories.")
        for i, m in enumerate(mounts):
            if not isinstance(m, dict):
                raise _fail(f"mounts[{i}] must be an object with memory, path and mode.")
            _only(m, ("memory", "path", "mode"), f"mounts[{i}]")
            memory = m.get("memory")
            if not isinstance(memory, str) or not MEMORY_ID_RE.match(memory):
                raise _fail(f"mounts[{i}].memory must be a Memory id: mem_ and 32 lowercase hex digits.")
            path = check_mount_path(m.get("path"), f"mounts[{i}].path")
            mode = m.get("mode", "readonly")
            respelled = mode_respelled(mode)
            if respelled is not None:
                raise ApiError("parameter_invalid", f"mounts[{i}].mode {respelled}.")
            if mode not in ("readonly", "readwrite"):
                raise _fail(f"mounts[{i}].mode must be exactly 'readonly' or 'readwrite'.")
            out.append(MountRequest(i, memory, path, mode))
    for a in out:
        for b in out:
            if a is b:
                continue
            if a.path == b.path and a.index > b.index:
                raise _fail(f"mounts[{a.index}].path {a.path!r} is also mounts[{b.index}].path.")
            if a.path.startswith(b.path + "/"):
                raise _fail(
                    f"mounts[{a.index}].path {a.path!r} lies inside mounts[{b.index}].path {b.path!r}: "
                    "mounts may not overlap."
                )
    return out


def plan(
    ctx: Context,
    requests: list[MountRequest],
    reach: Callable[[OrgMemory], access.Reach | None],
    agent_memories: list[Effective],
) -> list[Mount]:
    """The mount set a new execution captures: the configured mounts (checked against the caller's reach),
    then the server's (its agent/ and user/ roots, and the answering agent's Memories)."""
    ctx.fetch([Ref.memory(r.memory_id) for r in requests])
    mounts: list[Mount] = []
    for r in requests:
        mem: OrgMemory | None = ctx.loaded.get(Ref.memory(r.memory_id))
        found = None if mem is None or mem.account_id != ctx.principal.account_id else reach(mem)
        if mem is None or found is None:
            raise ApiError(
                "memory_scope_unavailable", f"mounts[{r.index}].memory: no Memory {r.memory_id} is visible to you."
            )
        if mem.archived:
            raise ApiError("memory_scope_unavailable", f"mounts[{r.index}].memory: Memory {mem.name!r} is archived.")
        mode: MountMode = r.mode
        if mem.source == "git":
            mode = "readonly"  # a git-synced Memory is read-only whatever a mount asks
        elif mode == "readwrite":
            access.grants_write(found.standing, f"mounts[{r.index}]", "a readwrite mount", mem.name)
        mounts.append(Mount(r.path, "memory", mode, mem.source, mem.memory_id, mem.name, None, mem.description))
    for scope in ("agent", "user"):
        src = _bound(ctx, scope)
        if src is not None:
            mode = "readwrite" if access.access_of(src) == "read_write" else "readonly"
            mounts.append(Mount(f"{SERVER}/{scope}", scope, mode))
    ctx.fetch([Ref.memory(e.memory_id) for e in agent_memories])
    for e in agent_memories:
        if e.archived:
            continue  # an archived Memory is not newly mounted
        # The principal's own reach bounds what the agent's Memories show it: a Human starting a session
        # the agent answers reads only the Memories their own access gives them, and writes only those
        # they may write (the agent itself reaches them by these very attachments and defaults).
        mem = ctx.loaded.get(Ref.memory(e.memory_id))
        found = None if mem is None else reach(mem)
        if found is None:
            continue
        mode = "readwrite" if e.mode == "readwrite" and found.standing == "write" else "readonly"
        source: Any = e.source
        mounts.append(
            Mount(f"{SERVER}/{e.name}", "memory", mode, source, e.memory_id, e.name, e.read_first, e.description)
        )
    return mounts


# ---- files by absolute path ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placed:
    """A session path resolved: the Context and path the memory verbs act on, and the mount it lies in
    (None for a root-relative path such as `conversation/notes.md`: the execution's own roots)."""

    mount: Mount | None
    context: Context
    path: MemoryPath

    def absolute(self, rest: str) -> str:
        """A file of this place as the session names it: under its mount, or under its root."""
        return f"{self.path.root}/{rest}" if self.mount is None else f"{self.mount.path}/{rest}"

    @property
    def name(self) -> str:
        return self.absolute(self.path.rest)

    def require_writable(self) -> None:
        """A change under a readonly mount, refused in the session's own words: the verbs below would name
        the root the mount stands for (`memory/`), which the session never sees. A root's own binding is
        the verbs' to judge (memory_read_only naming the root)."""
        if self.mount is not None and self.mount.mode == "readonly":
            raise ApiError(
                "memory_read_only", f"The mount {self.mount.path} is readonly in this session: it cannot be changed."
            )


def _bound(ctx: Context, scope: str) -> Source | None:
    """The root a server mount of agent/ or user/ documents stands for: the first binding of that scope."""
    return next((s for s in ctx.readable() if s.scope == scope), None)


def mount_of(ex: Execution, path: str) -> Mount | None:
    best = None
    for m in ex.mounts:
        if (path == m.path or path.startswith(m.path + "/")) and (best is None or len(m.path) > len(best.path)):
            best = m
    return best


def _outside(path: str) -> ApiError:
    return ApiError(
        "memory_scope_unavailable", f"{path[:200]!r} is outside every mount of this session: list '/' to see them."
    )


def place(ex: Execution, ctx: Context, path: Any, *, folder: bool = False) -> Placed:
    """The mount a path lies in and the path within it (a folder may be the mount itself)."""
    placed, refs = _planned(ex, ctx, path, folder=folder)
    ctx.fetch(refs)
    return _present(placed)


def _planned(ex: Execution, ctx: Context, path: Any, *, folder: bool = False) -> tuple[Placed, list[Ref]]:
    """A path placed in its mount without any request, and what placing it reads: a Memory mount's row
    (the Memory may have been deleted since the session began; its rows wait for the sweeper) and the
    file's, so the verbs find the file loaded."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ApiError("memory_path_invalid", "file.path must be an absolute path such as '/workspace/runbooks/a.md'.")
    path = path.rstrip("/") if folder else path
    mount = mount_of(ex, path)
    if mount is None:
        raise _outside(path)
    rest = path[len(mount.path) + 1 :]
    if not rest and not folder:
        raise ApiError("memory_path_invalid", f"{path!r} is a mount, not a file: name a file inside it.")
    if mount.kind == "memory":
        binding = Binding(FILES_ROOT, "memory", "read_write" if mount.mode == "readwrite" else "read")
        anchor = Anchor("memory", mount.memory_id or "")
        src = Source(binding, anchor, True)
        memory_ctx = Context(
            ctx.store,
            ctx.principal,
            "memory",
            {FILES_ROOT: src},
            loaded=ctx.loaded,
            execution_public_id=ctx.execution_public_id,
            stops=ctx.stops,
            files_under=mount.path,
        )
        mp = MemoryPath(FILES_ROOT, rest, plain=True) if folder else parse_file_path(rest)
        refs = [Ref.memory(anchor.owner_id), *([] if folder else [Ref.document(anchor, mp.rest)])]
        return Placed(mount, memory_ctx, mp), refs
    bound = _bound(ctx, mount.kind)
    if bound is None:
        raise _outside(path)
    mp = MemoryPath(bound.name, rest) if folder else parse_document_path(f"{bound.name}/{rest}")
    return Placed(mount, ctx, mp), []


def mounted_refs(ex: Execution, paths: tuple[Any, ...]) -> list[Ref]:
    """What placing these paths will read, known from the execution alone: a Memory mount's row and the
    file's, for the execution's own batch to carry. None for a root-relative path (the resolver's `paths`
    name its row) or for one that placing will refuse."""
    refs: list[Ref] = []
    for path in paths:
        if not isinstance(path, str) or not path.startswith("/"):
            continue
        mount = mount_of(ex, path)
        if mount is None or mount.kind != "memory":
            continue
        anchor = Anchor("memory", mount.memory_id or "")
        refs.append(Ref.memory(anchor.owner_id))
        try:
            refs.append(Ref.document(anchor, parse_file_path(path[len(mount.path) + 1 :]).rest))
        except ApiError:
            continue  # placing refuses the path once the caller is known
    return refs


def _present(placed: Placed) -> Placed:
    """A placed path whose Memory (if it lies in one) still exists, as the batch just read it."""
    mount = placed.mount
    if (
        mount is not None
        and mount.kind == "memory"
        and placed.context.loaded.get(Ref.memory(mount.memory_id or "")) is None
    ):
        raise deleted_meanwhile(mount)
    return placed


def deleted_meanwhile(*mounts: Mount) -> ApiError:
    """A Memory mount whose Memory is gone (of one or two a change reaches), in the session's words (the
    Memory's own door says not_found)."""
    where = " or the one at ".join(m.path for m in mounts)
    return ApiError(
        "memory_scope_unavailable", f"The Memory mounted at {where} has been deleted since the session began."
    )


def locate(ex: Execution, ctx: Context, path: Any) -> Placed:
    """A session file by either spelling the model's tools take: absolute inside a mount
    (`/workspace/runbooks/a.md`, `mounts.place`), or `<root>/<rest>` in the execution's frozen roots
    (`conversation/notes.md`). No root name starts with '/', so the two never overlap."""
    (placed,) = locate_all(ex, ctx, (path,))
    return placed


def locate_all(ex: Execution, ctx: Context, paths: tuple[Any, ...]) -> list[Placed]:
    """Several session files at once (a rename's two): every path is parsed first, then what their mounts
    need is read in one batch (none for root-relative paths: their rows ride in the resolver's batch when
    the handler named them, `relative_paths`)."""
    planned = [(Placed(None, ctx, parse_document_path(p)), []) if _relative(p) else _planned(ex, ctx, p) for p in paths]
    ctx.fetch([ref for _, refs in planned for ref in refs])
    return [_present(placed) for placed, _ in planned]


def _relative(path: Any) -> bool:
    return isinstance(path, str) and bool(path) and not path.startswith("/")


def relative_paths(*paths: Any) -> tuple[MemoryPath, ...]:
    """The root-relative session paths among `paths`, parsed before any I/O so that the resolver reads
    their documents in its own batch. One that does not parse is left out: `locate` refuses it once the
    caller is known, as every refused body is refused."""
    out = []
    for p in paths:
        if _relative(p):
            try:
                out.append(parse_document_path(p))
            except ApiError:
                continue
    return tuple(out)


def committed(placed: tuple[Placed, ...], change: Callable[[], T]) -> Callable[[], T]:
    """A session change whose commit may find a Memory it reaches deleted after the batch read its row:
    refused as that read would have refused it (memory_scope_unavailable), not as the Memory's own door
    answers (not_found). Nothing else in a session change's commit answers not_found."""
    mounts = list(dict.fromkeys(p.mount for p in placed if p.mount is not None and p.mount.kind == "memory"))

    def run() -> T:
        try:
            return change()
        except ApiError as err:
            if err.code != "not_found" or not mounts:
                raise
            raise deleted_meanwhile(*mounts) from err

    return run


class SessionFiles:
    """The memory verbs of an execution's file tree: its mounts by absolute path, its roots by
    `<root>/<rest>`."""

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    def roots_listing(self, ctx: Context, path: str) -> list[tuple[str, Located]]:
        """The execution's roots' documents: every root's for "", else those at or under a root-relative
        prefix (`conversation/`, `conversation/notes`), named `<root>/<rest>` as the verbs name them."""
        if path == "":
            rows = self.memory.listing(ctx)
        else:
            prefix = parse_prefix(path)
            rows = self.memory.listing(replace(ctx, sources={prefix.root: ctx.source(prefix)}))
            rows = [r for r in rows if prefix_matches(prefix.rest, r.document.rest)]
        return [(r.path, r) for r in rows]

    def listing(self, ex: Execution, ctx: Context, path: Any) -> list[tuple[str, Located]]:
        if isinstance(path, str) and not path.startswith("/"):
            return self.roots_listing(ctx, path)
        if not isinstance(path, str):
            raise ApiError("memory_path_invalid", "file.path must be an absolute folder such as '/' or '/workspace'.")
        folder = path.rstrip("/")
        if mount_of(ex, folder or "/") is None:
            # A folder above the mounts ('/', '/workspace', '/memory') lists every mount below it.
            below = [m for m in ex.mounts if m.path.startswith(folder + "/")]
            if not below and folder:
                raise _outside(path)
            rows: list[tuple[str, Located]] = []
            for m in below:
                if m.kind != "memory" and ctx.override_provider is not None:
                    continue  # agent/ and user/ rows are the override's provider's, as their verbs say
                rows += self.listing(ex, ctx, m.path)
            return sorted(rows, key=lambda r: r[0])
        placed = place(ex, ctx, folder, folder=True)
        # The verbs refuse a provider-overridden root (memory_overridden); so does its listing.
        refuse_override(placed.context, None)
        src = placed.context.source(placed.path)
        docs = placed.context.store.list_documents(src.anchored)
        return [
            (placed.absolute(d.rest), Located(placed.absolute(d.rest), d))
            for d in docs
            if prefix_matches(placed.path.rest, d.rest)
        ]
