"""Document content in S3: write-once versions, read through a process-wide cache."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from botocore.exceptions import ClientError

from agent_memory.api.errors import ApiError
from agent_memory.core.lru import Lru
from agent_memory.store.clients import Backend
from agent_memory.store.commit import Refusals, attempt, read

# What S3 answers for a key that holds no object (GetObject, and HeadObject, which has no error body).
_ABSENT = frozenset({"NoSuchKey", "404", "NotFound"})


class ContentCache(Lru[str]):
    """Process-wide LRU of immutable content, bounded in bytes. Safe because keys are never rewritten."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        # A str may hold up to 4 bytes a character, plus the entry's own overhead.
        super().__init__(max_bytes, lambda text: len(text) * 4 + 100)


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
    """Read and write content versions; a key, once written, always means the same text."""

    def read_content(self, key: str) -> str:
        """One content version; `memory_content_missing` when a pointer names an object that is gone."""
        cached = CACHE.get(key)
        if cached is not None:
            return cached
        text = self._get(key)
        if text is None:
            raise content_missing()
        return text

    def _get(self, key: str) -> str | None:
        text = self._fetch(key)
        if text is not None:
            CACHE.put(key, text)
        return text

    def _fetch(self, key: str) -> str | None:
        """The object's text, or None when S3 holds no such key (swept too early, deleted by hand)."""
        try:
            # The body is read inside `read` too: a connection that breaks mid-body is a storage fault.
            body: bytes = read(lambda: self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _ABSENT:
                return None
            raise
        return body.decode("utf-8")

    def fetch_contents(self, keys: Iterable[str]) -> dict[str, Future[str | None]]:
        """Each key's content as a future (None when its object is missing): cached keys already resolved,
        the rest fetched in parallel.

        Each key is fetched at most once per call: the text travels in its future, never back through
        the cache, so a working set larger than the cache cannot evict a text before it is read (which
        made a 320-document grep cost 640 GETs). The caller may cancel the futures it no longer needs.
        """
        unique = list(dict.fromkeys(keys))
        cached = {k: CACHE.get(k) for k in unique}
        missing = [k for k, text in cached.items() if text is None]
        out: dict[str, Future[str | None]] = {}
        for key in unique:
            text = cached[key]
            if text is None and len(missing) > 1:
                out[key] = pool().submit(self._get, key)
                continue
            # A lone missing key is fetched on the calling thread: the same wait, one thread hand-off fewer.
            done: Future[str | None] = Future()
            done.set_result(text if text is not None else self._get(key))
            out[key] = done
        return out

    def read_contents(self, keys: Iterable[str]) -> dict[str, str]:
        """Several contents fetched in parallel, each once; cached keys make no request.

        A key whose object is missing is left out of the answer, so one broken document costs its
        reader that document only (grep and the memory block say which they skipped).
        """
        out: dict[str, str] = {}
        for key, future in self.fetch_contents(keys).items():
            text = future.result()
            if text is not None:
                out[key] = text
        return out

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
        CACHE.put(key, text)

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
