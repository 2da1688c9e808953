"""LangGraph's long-term memory (`BaseStore`) kept by this service.

    pip install -e '.[langgraph]'

    from agent_memory_sdk import MemoryClient
    from agent_memory_sdk.integrations.langgraph import ServiceStore

    store = ServiceStore.for_memory(MemoryClient(url, token), memory_id)      # an organization Memory
    store = ServiceStore.for_door(client.workspace_memory(ws), "workspace")   # or a root of a memory door
    graph = builder.compile(store=store)   # nodes read and write it through `runtime.store` / `store`

**Layout.** One item is one document: `(namespace, key)` is `<folder>/<label>/.../<key>.json` under the
scope chosen (`folder` defaults to `langgraph`), each label and the key percent-encoded (`.` too), so any key
is one path segment and the files read as folders in every other door (the map, the console, the memory
tool). The document is JSON: `{"namespace", "key", "value", "created_at"}`. `updated_at` is the version's
`written_at`, kept by the service with every earlier version (history, rollback, redaction as for any
document). A Memory holds 1,000 items of up to 1 MiB; a door's root 64 of 64 KiB.

**Concurrency.** Every change is the service's conditional write. `put` and `delete` read the item's
current version and change it on that pair; when another writer's change lands between the two, nothing is
written and `StaleItem` (a `StaleObject`) is raised: the item is never replaced by a writer that did not see
it. Items returned here carry their version (`item.version`); `put(..., expected=item)` (or
`expected=None`: only while absent) writes on that version, so a node's read-modify-write refuses if
anyone changed the item since the node read it. Give such a node a `RetryPolicy(retry_on=StaleItem)`
and LangGraph reruns it on what is there now.

**Ops.** `batch` runs its ops in order (a get after a put in one batch sees the put). `search` lists the
items under the namespace prefix, newest first, keeps those whose value matches `filter` (exact values,
nested dicts, and `$eq $ne $gt $gte $lt $lte`, as LangGraph's own stores) and pages with `offset`/`limit`; a
`query` goes through the service's grep (case-insensitive, any of its words) and ranks by the share of its
words in the value (`score`), leaving out items with none. `list_namespaces` takes `prefix`, `suffix` (with
`*` wildcards), `max_depth`, `limit` and `offset`, sorted. No TTL (`supports_ttl` is False) and no vector
index (`index` is ignored).
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from agent_memory_sdk.client import (
    NEW,
    AlreadyExists,
    MemoryClient,
    MemoryDoor,
    MemoryFiles,
    MemoryNotFound,
    MemoryPathInvalid,
    NotFound,
    StaleObject,
)

__all__ = ["ServiceStore", "StaleItem", "VersionedItem", "VersionedSearchItem"]

SUFFIX = ".json"
Pair = tuple[str | None, int | None]


class _ReadFirst:
    """put's default expectation: the version current when put reads it."""


_READ = _ReadFirst()


class StaleItem(StaleObject):
    """The item changed after it was read (by this call, or by the caller whose `expected` it was): nothing
    was written. Read it again and redo the change."""


class VersionedItem(Item):
    """An `Item` with the service's version of it: `(public_id, lock_version)`."""

    __slots__ = ("version",)

    def __init__(self, *, version: tuple[str, int], **kw: Any) -> None:
        super().__init__(**kw)
        self.version = version


class VersionedSearchItem(SearchItem):
    """A `SearchItem` with the service's version of it."""

    __slots__ = ("version",)

    def __init__(self, *, version: tuple[str, int], **kw: Any) -> None:
        super().__init__(**kw)
        self.version = version


# ---- where the documents live --------------------------------------------------------------------


class _Tree(Protocol):
    """The few verbs the store needs of a file tree; paths are the tree's own."""

    def show(self, path: str) -> dict[str, Any] | None: ...
    def write(self, path: str, content: str, expected: Pair) -> dict[str, Any]: ...
    def delete(self, path: str, expected: Pair) -> None: ...
    def files(self, prefix: str) -> list[dict[str, Any]]: ...
    def grep(self, pattern: str, prefix: str) -> tuple[set[str], bool]: ...


class _MemoryTree:
    """An organization Memory's files (relative paths)."""

    def __init__(self, files: MemoryFiles) -> None:
        self.f = files

    def show(self, path: str) -> dict[str, Any] | None:
        try:
            return self.f.show(path)
        except (MemoryNotFound, NotFound):
            return None

    def write(self, path: str, content: str, expected: Pair) -> dict[str, Any]:
        return self.f.write(path, content, expected)

    def delete(self, path: str, expected: Pair) -> None:
        self.f.delete(path, expected)

    def files(self, prefix: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = self.f.ls(prefix=prefix, limit=1000, cursor=cursor)
            out += page["files"]
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def grep(self, pattern: str, prefix: str) -> tuple[set[str], bool]:
        answer = self.f.grep(pattern, path=prefix, ignore_case=True, limit=500)
        return {str(m["path"]) for m in answer["matches"]}, bool(answer.get("truncated"))


class _DoorTree:
    """One root of a memory door (`workspace/...`, `user/...`): paths carry the root."""

    def __init__(self, door: MemoryDoor) -> None:
        self.d = door

    def show(self, path: str) -> dict[str, Any] | None:
        try:
            return self.d.show(path)
        except (MemoryNotFound, NotFound):
            return None

    def write(self, path: str, content: str, expected: Pair) -> dict[str, Any]:
        return self.d.write(path, content, expected)

    def delete(self, path: str, expected: Pair) -> None:
        self.d.delete(path, expected)

    def files(self, prefix: str) -> list[dict[str, Any]]:
        return [d for d in self.d.ls() if str(d["path"]).startswith(prefix)]

    def grep(self, pattern: str, prefix: str) -> tuple[set[str], bool]:
        answer = self.d.grep(pattern, path=prefix, ignore_case=True, limit=500)
        return {str(m["path"]) for m in answer["matches"]}, bool(answer.get("truncated"))


# ---- names ---------------------------------------------------------------------------------------


def _encode(label: str) -> str:
    # quote() keeps '.', which would let a key be '.' or '..' (no path takes those) and could end in SUFFIX.
    return urllib.parse.quote(label, safe="").replace(".", "%2E")


def _decode(segment: str) -> str:
    return urllib.parse.unquote(segment)


def _now() -> datetime:
    return datetime.now(UTC)


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---- filters (LangGraph's own semantics: exact, nested, $eq $ne $gt $gte $lt $lte) -----------------


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, v) for op, v in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _operator(value: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return bool(value == wanted)
    if op == "$ne":
        return bool(value != wanted)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported filter operator {op!r}: use $eq, $ne, $gt, $gte, $lt or $lte.")
    try:
        a, b = float(value), float(wanted)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not greater or less than anything
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    ours = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, ours, strict=True))


_WORD = re.compile(r"\w+")


# ---- the store -----------------------------------------------------------------------------------


class ServiceStore(BaseStore):
    """A LangGraph `BaseStore` whose items are documents of this service (see the module's docstring)."""

    supports_ttl = False

    def __init__(self, tree: _Tree, base: str, *, max_workers: int = 8) -> None:
        self._tree = tree
        self._base = base.rstrip("/")
        self._workers = max(1, max_workers)

    @classmethod
    def for_memory(
        cls, client: MemoryClient, memory_id: str, *, folder: str = "langgraph", max_workers: int = 8
    ) -> ServiceStore:
        """The items as files of an organization Memory, under `folder` ("" for the Memory's top)."""
        return cls(_MemoryTree(client.memory_files(memory_id)), folder.strip("/"), max_workers=max_workers)

    @classmethod
    def for_door(cls, door: MemoryDoor, root: str, *, folder: str = "langgraph", max_workers: int = 8) -> ServiceStore:
        """The items as documents of one root of a memory door (`workspace`, `user`, `agent`, ...)."""
        base = "/".join(p for p in (root.strip("/"), folder.strip("/")) if p)
        return cls(_DoorTree(door), base, max_workers=max_workers)

    # ---- paths ----

    def _dir(self, namespace: tuple[str, ...]) -> str:
        parts = [self._base, *(_encode(label) for label in namespace)] if self._base else list(map(_encode, namespace))
        return "/".join(parts)

    def _path(self, namespace: tuple[str, ...], key: str) -> str:
        return f"{self._dir(namespace)}/{_encode(key)}{SUFFIX}".lstrip("/")

    def _name(self, path: str) -> tuple[tuple[str, ...], str] | None:
        """The (namespace, key) a path holds, or None for a file that is not an item."""
        rest = path[len(self._base) + 1 :] if self._base else path
        if (self._base and not path.startswith(self._base + "/")) or not rest.endswith(SUFFIX):
            return None
        *labels, leaf = rest.split("/")
        if not labels:
            return None  # an item always has a namespace
        return tuple(_decode(s) for s in labels), _decode(leaf[: -len(SUFFIX)])

    # ---- reading ----

    def _item(self, f: Mapping[str, Any]) -> VersionedItem | None:
        try:
            doc = json.loads(str(f.get("content") or ""))
            value = doc["value"]
            created = _when(str(doc["created_at"]))
        except (ValueError, KeyError, TypeError):
            return None  # not a document this store wrote: left alone
        if not isinstance(value, dict):
            return None
        name = self._name(str(f["path"]))
        if name is None:
            return None
        fields: dict[str, Any] = {
            "namespace": name[0],
            "key": name[1],
            "value": value,
            "created_at": created,
            "updated_at": _when(str(f["written_at"])),
            "version": (str(f["public_id"]), int(f["lock_version"])),
        }
        return VersionedItem(**fields)

    def _get(self, op: GetOp) -> Item | None:
        f = self._tree.show(self._path(op.namespace, op.key))
        return None if f is None else self._item(f)

    def _listed(self, prefix: tuple[str, ...]) -> list[tuple[dict[str, Any], tuple[tuple[str, ...], str]]]:
        folder = self._dir(prefix)
        rows = self._tree.files(folder + "/" if folder else "")
        out = []
        for row in rows:
            name = self._name(str(row["path"]))
            if name is not None and name[0][: len(prefix)] == prefix:
                out.append((row, name))
        return out

    def _load(self, paths: list[str]) -> list[dict[str, Any]]:
        """The files at these paths, read in parallel (one request each), in the order given."""
        if len(paths) <= 1 or self._workers == 1:
            found = [self._tree.show(p) for p in paths]
        else:
            with ThreadPoolExecutor(max_workers=min(self._workers, len(paths))) as pool:
                found = list(pool.map(self._tree.show, paths))
        return [f for f in found if f is not None]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise ValueError("search needs a limit and an offset of 0 or more")
        rows = self._listed(op.namespace_prefix)
        rows.sort(key=lambda r: (str(r[0]["written_at"]), str(r[0]["path"])), reverse=True)  # newest first
        paths = [str(r[0]["path"]) for r in rows]
        words = sorted({w.lower() for w in _WORD.findall(op.query or "")})
        if words:
            hits, truncated = self._tree.grep("|".join(map(re.escape, words)), self._dir(op.namespace_prefix))
            if not truncated:
                paths = [p for p in paths if p in hits]
        elif not op.filter:
            paths = paths[op.offset : op.offset + op.limit]  # nothing to judge: read only the page
        items: list[tuple[float | None, VersionedItem]] = []
        for f in self._load(paths):
            item = self._item(f)
            if item is None or (op.filter and not all(_matches(item.value.get(k), v) for k, v in op.filter.items())):
                continue
            score: float | None = None
            if words:
                text = json.dumps(item.value, ensure_ascii=False).lower()
                found = sum(1 for w in words if re.search(rf"\b{re.escape(w)}\b", text))
                if not found:
                    continue
                score = found / len(words)
            items.append((score, item))
        if words:
            items.sort(key=lambda s: -(s[0] or 0.0))  # stable: newest first among equals
        if words or op.filter:
            items = items[op.offset : op.offset + op.limit]
        return [
            VersionedSearchItem(
                namespace=i.namespace,
                key=i.key,
                value=i.value,
                created_at=i.created_at,
                updated_at=i.updated_at,
                score=s,
                version=i.version,
            )
            for s, i in items
        ]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {name[0] for _, name in self._listed(())}
        if op.match_conditions:
            found = {ns for ns in found if all(_namespace_matches(c, ns) for c in op.match_conditions)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    # ---- changing ----

    def _put(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None, expected: Item | _ReadFirst | None
    ) -> None:
        path = self._path(namespace, key)
        if isinstance(expected, _ReadFirst):
            current = self._tree.show(path)
            pair: Pair = NEW if current is None else (str(current["public_id"]), int(current["lock_version"]))
            created = self._created(current)
        elif expected is None:
            pair, created = NEW, None
        else:
            version = getattr(expected, "version", None)
            if version is None:
                raise TypeError("expected must be an item this store returned (it carries .version), or None")
            pair, created = (version[0], version[1]), expected.created_at
        try:
            if value is None:
                if pair == NEW:
                    return  # deleting what is not there is a no-op, as in LangGraph's own stores
                self._tree.delete(path, pair)
                return
            body = {
                "namespace": list(namespace),
                "key": key,
                "value": dict(value),
                "created_at": (created or _now()).isoformat(),
            }
            self._tree.write(path, json.dumps(body, ensure_ascii=False, sort_keys=True), pair)
        except (StaleObject, AlreadyExists) as err:
            raise StaleItem(
                f"The item {namespace}/{key!r} was changed by another writer after it was read: nothing was "
                "written. Read it again and redo the change.",
                code="stale_object",
                status=409,
                details=err.details,
            ) from err

    @staticmethod
    def _created(current: Mapping[str, Any] | None) -> datetime | None:
        if current is None:
            return None
        try:
            return _when(str(json.loads(str(current.get("content") or ""))["created_at"]))
        except (ValueError, KeyError, TypeError):
            return None

    # ---- BaseStore ----

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        try:
            return self._batch(ops)
        except MemoryPathInvalid as err:
            # A namespace or key too long (or otherwise unfit) for a document path: the caller's to fix.
            raise ValueError(f"The namespace or key makes a path the service refuses: {err.message}") from err

    def _batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            elif isinstance(op, PutOp):
                if op.ttl is not None:
                    raise NotImplementedError(f"TTL is not supported by {type(self).__name__}: leave ttl out.")
                self._put(op.namespace, op.key, op.value, _READ)
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The client is synchronous (urllib): the ops run in a worker thread so the event loop never waits.
        return await asyncio.to_thread(self.batch, list(ops))

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
        expected: Item | _ReadFirst | None = _READ,
    ) -> None:
        """Create or replace an item. `expected`: an item this store returned (write only while it is still
        that version), None (only while absent), or left out (the version current when put reads it)."""
        if isinstance(expected, _ReadFirst):
            super().put(namespace, key, value, index, ttl=ttl)
            return
        self._conditional(namespace, key, value, ttl, expected)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
        expected: Item | _ReadFirst | None = _READ,
    ) -> None:
        """`put` for async nodes."""
        if isinstance(expected, _ReadFirst):
            await super().aput(namespace, key, value, index, ttl=ttl)
            return
        await asyncio.to_thread(self._conditional, namespace, key, value, ttl, expected)

    def _conditional(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        ttl: float | NotProvided | None,
        expected: Item | None,
    ) -> None:
        if ttl not in (NOT_PROVIDED, None):
            raise NotImplementedError(f"TTL is not supported by {type(self).__name__}: leave ttl out.")
        # The checks BaseStore.put makes before it batches (an empty namespace, a "langgraph" root, a bad label).
        validate_op_namespace(PutOp(namespace, str(key), value))
        if not namespace or namespace[0] == "langgraph":
            raise InvalidNamespaceError(f"Namespace cannot be empty or start with 'langgraph'. Got: {namespace}")
        try:
            self._put(namespace, str(key), value, expected)
        except MemoryPathInvalid as err:
            raise ValueError(f"The namespace or key makes a path the service refuses: {err.message}") from err
