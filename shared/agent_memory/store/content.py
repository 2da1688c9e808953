"""Document content in S3: write-once versions, read through a process-wide cache."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import ApiError
from ..lru import Lru
from .clients import Backend
from .errors import Refusals, attempt


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
        cached = CACHE.get(key)
        if cached is not None:
            return cached
        return self._get(key)

    def _get(self, key: str) -> str:
        body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        text: str = body.decode("utf-8")
        CACHE.put(key, text)
        return text

    def fetch_contents(self, keys: Iterable[str]) -> dict[str, Future[str]]:
        """Each key's content as a future: cached keys already resolved, the rest fetched in parallel.

        Each key is fetched at most once per call: the text travels in its future, never back through
        the cache, so a working set larger than the cache cannot evict a text before it is read (which
        made a 320-document grep cost 640 GETs). The caller may cancel the futures it no longer needs.
        """
        unique = list(dict.fromkeys(keys))
        cached = {k: CACHE.get(k) for k in unique}
        missing = [k for k, text in cached.items() if text is None]
        out: dict[str, Future[str]] = {}
        for key in unique:
            text = cached[key]
            if text is None and len(missing) > 1:
                out[key] = pool().submit(self._get, key)
                continue
            # A lone missing key is fetched on the calling thread: the same wait, one thread hand-off fewer.
            done: Future[str] = Future()
            done.set_result(text if text is not None else self._get(key))
            out[key] = done
        return out

    def read_contents(self, keys: Iterable[str]) -> dict[str, str]:
        """Several contents fetched in parallel, each once; cached keys make no request."""
        return {k: f.result() for k, f in self.fetch_contents(keys).items()}

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
            Refusals({"content": lambda _: ApiError("already_exists", "That content version already exists.")}),
        )
        CACHE.put(key, text)
