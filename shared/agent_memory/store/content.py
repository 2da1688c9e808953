"""Document content in S3: write-once versions, read through a process-wide cache."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from botocore.exceptions import ClientError

from agent_memory.api.errors import ApiError, content_corrupt
from agent_memory.core import observability
from agent_memory.core.ids import sha256_hex
from agent_memory.core.lru import Lru
from agent_memory.core.model import Contents, Held
from agent_memory.store.clients import Backend
from agent_memory.store.commit import Refusals, attempt, read

# What S3 answers for a key that holds no object (GetObject, and HeadObject, which has no error body).
_ABSENT = frozenset({"NoSuchKey", "404", "NotFound"})


class _Corrupt:
    """What `_read` answers for bytes that failed their check."""


CORRUPT = _Corrupt()


class ContentCache(Lru[tuple[str, str]]):
    """Process-wide LRU of immutable content, bounded in bytes. Safe because keys are never rewritten.

    Each text is kept with its SHA-256 (hex), taken from the bytes it was written or fetched as: a row
    naming the key is checked against it without hashing the text again."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        # A str may hold up to 4 bytes a character, plus the entry's own overhead and its digest.
        super().__init__(max_bytes, lambda held: len(held[0]) * 4 + 100)


CACHE = ContentCache()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def pool() -> ThreadPoolExecutor:
    """The container's I/O threads, for requests sent in parallel (created on first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="am-io")
        return _POOL


class Content(Backend):
    """Read and write content versions; a key, once written, always means the same text.

    Every read is checked here, and only here: the bytes fetched (or the digest cached with them) must hash
    to the SHA-256 the row names (`Held.sha256`, recorded when the version was written). An object edited,
    truncated or swapped behind the service is never served: the reader gets `memory_content_corrupt`
    (or, from the batch readers, the key in `corrupt`), and an operator gets an ERROR line and a metric.
    """

    def read_content(self, held: Held) -> str:
        """One content version; `memory_content_missing` when its object is gone, `memory_content_corrupt`
        when its bytes are not the ones its version recorded."""
        text = self._read(held)
        if text is None:
            raise content_missing()
        if isinstance(text, _Corrupt):
            raise content_corrupt(held.path, held.lock_version)
        return text

    def _read(self, held: Held, cached: tuple[str, str] | None = None) -> str | _Corrupt | None:
        """The checked text, None when the object is missing, or CORRUPT. `cached` is the cache's entry
        for the key when the caller already looked it up (None: look it up now)."""
        if cached is None:
            cached = CACHE.get(held.key)
        if cached is None:
            fetched = self._fetch(held.key)
            if fetched is None:
                return None
            data, digest = fetched
            if not hmac.compare_digest(digest, held.sha256):
                return _corrupt(held, len(data))
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:  # only if the recorded hash itself is of bytes that are not UTF-8
                return _corrupt(held, len(data))
            CACHE.put(held.key, (text, digest))
            return text
        text, digest = cached
        if not hmac.compare_digest(digest, held.sha256):
            # The object was checked when it was cached; a row naming it with another hash is what changed.
            return _corrupt(held, None)
        return text

    def _fetch(self, key: str) -> tuple[bytes, str] | None:
        """The object's bytes and their SHA-256, or None when S3 holds no such key (swept too early,
        deleted by hand)."""
        try:
            # The body is read inside `read` too: a connection that breaks mid-body is a storage fault.
            body: bytes = read(lambda: self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _ABSENT:
                return None
            raise
        return body, hashlib.sha256(body).hexdigest()

    def fetch_contents(self, helds: Iterable[Held]) -> dict[str, Future[str | None]]:
        """Each key's checked content as a future: None when its object is missing, and raising
        `memory_content_corrupt` when its bytes are not the recorded ones. Cached keys are already resolved,
        the rest fetched in parallel.

        Each key is fetched at most once per call: the text travels in its future, never back through
        the cache, so a working set larger than the cache cannot evict a text before it is read (which
        made a 320-document grep cost 640 GETs). The caller may cancel the futures it no longer needs.
        """
        unique = list({h.key: h for h in helds}.values())
        # Looked up once, up front: a fetch running meanwhile cannot evict a text this call already holds.
        cached = {h.key: CACHE.get(h.key) for h in unique}
        waiting = sum(1 for entry in cached.values() if entry is None)
        out: dict[str, Future[str | None]] = {}
        for held in unique:
            entry = cached[held.key]
            if entry is None and waiting > 1:
                out[held.key] = pool().submit(self.read_checked, held)
                continue
            # A cached key, or a lone missing one, on the calling thread: the same wait, one hand-off fewer.
            done: Future[str | None] = Future()
            try:
                done.set_result(self.read_checked(held, entry))
            except ApiError as exc:
                done.set_exception(exc)
            out[held.key] = done
        return out

    def read_checked(self, held: Held, cached: tuple[str, str] | None = None) -> str | None:
        """The checked text or None when the object is missing; raises `memory_content_corrupt`."""
        text = self._read(held, cached)
        if isinstance(text, _Corrupt):
            raise content_corrupt(held.path, held.lock_version)
        return text

    def read_contents(self, helds: Iterable[Held]) -> Contents:
        """Several checked contents fetched in parallel, each once; cached keys make no request.

        A key whose object is missing or whose bytes fail the check is left out of `texts` (and named in
        `corrupt` when it failed), so one broken document costs its reader that document only (grep and
        the memory block say which they skipped, and why).
        """
        texts: dict[str, str] = {}
        corrupt: set[str] = set()
        for key, future in self.fetch_contents(helds).items():
            try:
                text = future.result()
            except ApiError as exc:
                if exc.code != "memory_content_corrupt":
                    raise
                corrupt.add(key)
                continue
            if text is not None:
                texts[key] = text
        return Contents(texts, frozenset(corrupt))

    def put_content(self, key: str, text: str) -> None:
        """Store a new version; refuses `already_exists` if the key was ever written."""
        # IfNoneMatch makes the key write-once: a content version can never be overwritten in place.
        attempt(
            lambda: self.s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=text.encode("utf-8"),
                ContentType="text/markdown; charset=utf-8",
                IfNoneMatch="*",
            ),
            ["content"],
            Refusals(
                {"content": lambda _: ApiError("already_exists", "That content version already exists.")},
                landed=lambda _: self._holds(key, text),
            ),
        )
        CACHE.put(key, (text, sha256_hex(text.encode("utf-8"))))

    def _holds(self, key: str, text: str) -> bool:
        """Whether the object at `key` is exactly `text`: a refused put of it was an earlier send that landed.

        botocore resends a PUT whose answer timed out, and If-None-Match then refuses the very object the
        first send stored; its ETag (the MD5 of a single-part upload) tells it apart from another text.
        """
        try:
            head = read(lambda: self.s3.head_object(Bucket=self.bucket, Key=key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _ABSENT:
                return False
            raise
        digest = hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()
        return str(head.get("ETag", "")).strip('"') == digest


def content_missing() -> ApiError:
    return ApiError(
        "memory_content_missing",
        "This document's content is missing from storage. Write the document again with its "
        "expected_public_id and expected_lock_version to replace it, or delete it.",
    )


def _corrupt(held: Held, size: int | None) -> _Corrupt:
    """Tell the operator (one ERROR line, one metric; never the content) and answer CORRUPT."""
    observability.content_corrupt(key=held.key, path=held.path, lock_version=held.lock_version, size=size)
    return CORRUPT
