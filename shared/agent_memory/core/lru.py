"""A thread-safe LRU for values that never change under their key (content versions, execution rows)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class Lru(Generic[V]):
    """Bounded by the summed `cost` of its values. A key's first value stays: keys are immutable here."""

    def __init__(self, limit: int, cost: Callable[[V], int]) -> None:
        self._limit = limit
        self._cost = cost
        self._size = 0
        self._items: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: V) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._size += self._cost(value)
            while self._size > self._limit and self._items:
                _, old = self._items.popitem(last=False)
                self._size -= self._cost(old)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0

    def discard(self, key: str) -> None:
        """Forget one key (a redacted version's text must not outlive its object here)."""
        with self._lock:
            value = self._items.pop(key, None)
            if value is not None:
                self._size -= self._cost(value)
