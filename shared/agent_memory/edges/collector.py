"""CPython's cyclic garbage collector across a Lambda function's cold start.

What a cold start makes (modules, classes, the clients and their service models) lives as long as the
container, yet the collector scans it again and again while it grows: measured on the sync route, about
one tenth of process start to first answer went to collections that found nothing to free (ten
middle-generation and one full collection over the freshly imported objects).

So a function process holds the collector from when its handler is built until its first invocation has
answered, then freezes what exists (`gc.freeze`: those objects are never scanned again, which also makes
every later full collection cheaper) and lets the collector run as usual on what requests make. A single
invocation's cyclic garbage is bounded by the request limits; whatever of it is still unreachable when
the freeze happens is kept, once, for the container's life.

Only in a process Lambda started for one function (`AWS_LAMBDA_FUNCTION_NAME` is set): the local gateway
and the tests load every handler in one long-running process, and keep the collector as it is.
"""

from __future__ import annotations

import gc
import os
import threading

_lock = threading.Lock()
_held = False


def hold() -> None:
    """Pause collections for the cold start (no-op outside a Lambda function, or when already paused)."""
    global _held
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    with _lock:
        if not _held and gc.isenabled():
            gc.disable()
            _held = True


def release() -> None:
    """After an invocation: if the cold start held the collector, freeze what the start made and resume."""
    global _held
    if not _held:  # every warm invocation: one global read
        return
    with _lock:
        if _held:
            _held = False
            gc.freeze()
            gc.enable()
