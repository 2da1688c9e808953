"""The fork log: the content keys each fork copied, for the sweeper.

A fork makes new pointers to content that may be old, so the sweeper's grace period (an object's age)
does not protect it: a fork that read its parent's rows, then commits while a sweep scans the table,
can land its copies in a part the scan has already passed while the parent's own rows are deleted
before the scan reaches them. Each fork therefore also records the content keys it copied, in the same
transaction, under an hourly partition that the sweeper reads after its scan (store/sweeper.py).
"""

from __future__ import annotations

import time
from typing import Any

from agent_memory.core import clock
from agent_memory.store import keys

FORK_LOG_TTL_SECONDS = 3 * 24 * 3600


def fork_log_partition(epoch: float) -> str:
    """The log's partition key for the UTC hour holding `epoch`."""
    return keys.fork_log_pk(time.strftime("%Y-%m-%dT%H", time.gmtime(epoch)))


def fork_log_time(epoch: float) -> str:
    """Sortable UTC time with milliseconds, the log's sort key prefix."""
    ms = int(epoch * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def fork_log_item(child_id: str, content_keys: list[str], epoch: float | None = None) -> dict[str, Any]:
    """The log entry of one fork, as a plain dict (`items.marshal` spells it for DynamoDB)."""
    at = clock.now() if epoch is None else epoch
    pk, sk = keys.fork_log(time.strftime("%Y-%m-%dT%H", time.gmtime(at)), fork_log_time(at), child_id)
    return {
        "pk": pk,
        "sk": sk,
        "content_keys": sorted(set(content_keys)),
        # DynamoDB's TTL removes the entry long after any sweep could need it.
        "expires_at": int(at) + FORK_LOG_TTL_SECONDS,
    }
