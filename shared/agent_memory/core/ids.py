"""Identifiers and bearer tokens (timestamps are core/clock.py's; `now_iso` is re-exported for its callers)."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
import time
import uuid

from agent_memory.api.contract import UUID_PATTERN
from agent_memory.core.clock import now_iso as now_iso  # where most callers have always found it
from agent_memory.core.lazy_dataclass import dataclass

# The one spelling of a public id is the contract's: JSON schemas and request models use the text,
# `is_uuid` the compiled form (with \Z, since Python's `$` would also accept a trailing newline).
_UUID_RE = re.compile(UUID_PATTERN[:-1] + r"\Z")

_last_ms = 0
_seq = 0
_lock = threading.Lock()


def uuid7() -> str:
    """A UUIDv7 string: time-ordered, so ids sort by creation like the rows they name."""
    global _last_ms, _seq
    with _lock:
        # Real time, not the service's clock: a test holding that clock (even in the future, then letting
        # it go) must not stall the id sequence, whose order is the rows' order.
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same or earlier millisecond: keep ids monotonic within the process.
            ms = _last_ms
            _seq += 1
        else:
            _seq = 0
        _last_ms = ms
        seq = _seq & 0xFFF
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand
    return str(uuid.UUID(int=value))


def is_uuid(value: object) -> bool:
    return isinstance(value, str) and _UUID_RE.match(value) is not None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# A token names its principal in clear so the request can load everything it needs in one batch; the
# secret part is what proves it, and only its hash is ever stored.
_TOKEN_RE = re.compile(r"^am_([ha])_([0-9a-f]{32})_([A-Za-z0-9_-]{32,64})$")
_KIND_LETTER = {"human": "h", "agent": "a"}
_LETTER_KIND = {v: k for k, v in _KIND_LETTER.items()}


@dataclass(frozen=True, slots=True)
class PresentedToken:
    principal_kind: str
    principal_id: str
    digest: str


def mint_token(principal_kind: str, principal_id: str) -> tuple[str, str]:
    """Return (token, digest). The token is shown once; the digest is what the store keeps."""
    token = f"am_{_KIND_LETTER[principal_kind]}_{principal_id.replace('-', '')}_{secrets.token_urlsafe(32)}"
    return token, token_digest(token)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_token(token: str) -> PresentedToken | None:
    m = _TOKEN_RE.match(token)
    if m is None:
        return None
    raw = m.group(2)
    principal_id = f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"
    return PresentedToken(_LETTER_KIND[m.group(1)], principal_id, token_digest(token))


def digests_equal(a: str, b: str) -> bool:
    """Compare two secrets (or their digests) in constant time.

    hmac.compare_digest refuses a str with non-ASCII characters (a TypeError, so a 500), and a header
    value is whatever the caller sent: compare the UTF-8 bytes instead (surrogatepass, so even a lone
    surrogate in an event encodes, one-to-one, and is simply unequal)."""
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))
