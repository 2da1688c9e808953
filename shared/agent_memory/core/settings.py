"""Deployment settings, read from the environment once per container (never at import)."""

from __future__ import annotations

import os
from functools import lru_cache

from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import DEFAULT_EXECUTION_TTL_SECONDS, DEFAULT_VERSIONS_KEPT, MAX_VERSIONS_KEPT

# The folders file:// Git sources may be read from, os.pathsep-separated; unset or empty means none.
GIT_FILE_ROOTS = "AGENT_MEMORY_GIT_FILE_ROOTS"


@dataclass(frozen=True)
class Settings:
    """A plain dataclass checked by hand: pydantic's import and model build cost a cold start tens of ms
    (docs/decisions.md, "Issue 27"), and these few bounds need no schema."""

    table_name: str
    bucket_name: str
    region: str = "us-east-1"
    # Locally the operator key comes from the environment; in AWS from an SSM SecureString parameter.
    operator_key: str | None = None
    operator_key_parameter: str | None = None
    # Each caller's memory writes per minute (the seed's ordinary caller budget); None turns it off.
    writes_per_minute: int | None = 600
    # The account's and the source address's writes per minute (budget.py); None turns each off.
    account_writes_per_minute: int | None = 6000
    origin_writes_per_minute: int | None = 6000
    # How long an execution's tools answer after it starts.
    execution_ttl_seconds: int = DEFAULT_EXECUTION_TTL_SECONDS
    # Versions each document keeps, its current one included (docs/architecture.md, "Versions").
    versions_kept: int = DEFAULT_VERSIONS_KEPT
    # The folders under which a git-synced Memory may name a file:// repository (AGENT_MEMORY_GIT_FILE_ROOTS,
    # os.pathsep-separated): none in AWS, one inside the data directory in `agent-memory serve`.
    git_file_roots: tuple[str, ...] = ()
    # How long a DynamoDB or S3 answer may take before the request is given up (storage_unavailable). The
    # benchmark raises it: serialised moto answers a 10,000-record search's Queries far slower than AWS.
    aws_read_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        problems = []
        if not self.table_name:
            problems.append("table_name: at least 1 character")
        if not self.bucket_name:
            problems.append("bucket_name: at least 1 character")
        for name in ("writes_per_minute", "account_writes_per_minute", "origin_writes_per_minute"):
            value = getattr(self, name)
            if value is not None and value < 1:
                problems.append(f"{name}: at least 1, or off")
        if self.execution_ttl_seconds < 1:
            problems.append("execution_ttl_seconds: at least 1")
        if not 1 <= self.versions_kept <= MAX_VERSIONS_KEPT:
            problems.append(f"versions_kept: from 1 to {MAX_VERSIONS_KEPT}")
        if not 0 < self.aws_read_timeout_seconds <= 60:
            problems.append("aws_read_timeout_seconds: above 0, at most 60")
        if problems:
            raise ValueError("invalid settings: " + "; ".join(problems))


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings(
        table_name=os.environ.get("TABLE_NAME", "agent-memory"),
        bucket_name=os.environ.get("BUCKET_NAME", "agent-memory-content"),
        region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        operator_key=os.environ.get("AGENT_MEMORY_OPERATOR_KEY") or None,
        operator_key_parameter=os.environ.get("OPERATOR_KEY_PARAMETER") or None,
        writes_per_minute=_budget(os.environ.get("AGENT_MEMORY_WRITES_PER_MINUTE")),
        account_writes_per_minute=_budget(os.environ.get("AGENT_MEMORY_ACCOUNT_WRITES_PER_MINUTE"), 6000),
        origin_writes_per_minute=_budget(os.environ.get("AGENT_MEMORY_ORIGIN_WRITES_PER_MINUTE"), 6000),
        execution_ttl_seconds=int(
            os.environ.get("AGENT_MEMORY_EXECUTION_TTL_SECONDS") or DEFAULT_EXECUTION_TTL_SECONDS
        ),
        versions_kept=int(os.environ.get("AGENT_MEMORY_VERSIONS_KEPT") or DEFAULT_VERSIONS_KEPT),
        git_file_roots=tuple(r for r in (os.environ.get(GIT_FILE_ROOTS) or "").split(os.pathsep) if r),
        aws_read_timeout_seconds=float(os.environ.get("AGENT_MEMORY_AWS_READ_TIMEOUT") or 10.0),
    )


def _budget(raw: str | None, default: int = 600) -> int | None:
    if raw is None or raw == "":
        return default
    if raw.lower() in ("0", "off", "none"):
        return None
    return int(raw)
