"""The deployment's operator key: from the environment locally, from an SSM SecureString in AWS."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def operator_key() -> str | None:
    """Read once per container; only create_account's role may read the parameter."""
    from agent_memory.core.settings import settings  # on the first request that asks, not at import

    s = settings()
    if s.operator_key:
        return s.operator_key
    if s.operator_key_parameter:
        # botocore's own session: importing boto3 would cost the first request ~17 ms for nothing it adds.
        from botocore.session import get_session

        ssm: Any = get_session().create_client("ssm", region_name=s.region)
        value: str = ssm.get_parameter(Name=s.operator_key_parameter, WithDecryption=True)["Parameter"]["Value"]
        return value
    return None
