"""Shared fixtures. Every AWS call in the suite goes to an embedded, serialised moto: never to AWS."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Set before any boto3 client exists, so nothing can reach a real account by accident.
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("AWS_SESSION_TOKEN", None)
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
# No EMF documents on stdout; tests/unit/test_observability.py turns metrics on where it reads them.
os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
# The per-caller write budget would throttle a fast test run; tests/http/test_rate_limit.py turns it on.
os.environ["AGENT_MEMORY_WRITES_PER_MINUTE"] = "off"
os.environ["AGENT_MEMORY_ACCOUNT_WRITES_PER_MINUTE"] = "off"
os.environ["AGENT_MEMORY_ORIGIN_WRITES_PER_MINUTE"] = "off"

from agent_memory_sdk.local.runtime import LocalService, start_local

from .support import Api


@pytest.fixture(scope="session")
def service() -> Iterator[LocalService]:
    svc = start_local(port=0)
    yield svc
    svc.stop()


@pytest.fixture
def fresh(service: LocalService) -> LocalService:
    """A service with empty storage: moto is reset before each test that asks for it."""
    service.reset()
    return service


@pytest.fixture
def api(fresh: LocalService) -> Api:
    return Api(fresh.url, fresh.operator_key)
