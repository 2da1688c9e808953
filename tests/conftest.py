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

import json
from typing import Any

from agent_memory.api.contract import RouteSpec
from agent_memory.core.settings import settings
from agent_memory.edges.http import lambda_entry
from agent_memory_sdk.local.runtime import LocalService, start_local

from .support import Api

# Success answers that did not match their route's answer model (edges/answers.py), from any test.
ANSWER_MISMATCHES: list[str] = []


def _checking_answers(dispatch: Any) -> Any:
    """The gateway's dispatch, holding every JSON success answer to its route's answer model."""
    from agent_memory.edges.answers import ANSWERS, answer_model

    def checked(route: RouteSpec, fn: Any, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = dispatch(route, fn, event, context)
        if route.name in ANSWERS and 200 <= out["statusCode"] < 300 and out["body"]:
            try:
                answer_model(ANSWERS[route.name]).model_validate(json.loads(out["body"]))
            except ValueError as err:
                ANSWER_MISMATCHES.append(f"{route.name}: {str(err)[:400]}")
        return out

    return checked


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalService]:
    # The Git repositories the tests make (tests/gitrepos.py) all lie under the session's temporary folder:
    # the one folder file:// sources may be read from (the product names none unless told).
    os.environ.setdefault("AGENT_MEMORY_GIT_FILE_ROOTS", str(tmp_path_factory.getbasetemp()))
    settings.cache_clear()
    # The Lambda entry calls glue's dispatch by the name it imported: that name is the one wrapped.
    original = vars(lambda_entry)["dispatch"]
    setattr(lambda_entry, "dispatch", _checking_answers(original))  # noqa: B010
    svc = start_local(port=0)
    yield svc
    svc.stop()
    setattr(lambda_entry, "dispatch", original)  # noqa: B010


@pytest.fixture(autouse=True)
def _answers_match_their_models() -> Iterator[None]:
    """Every success answer a test sees is one its route's answer model describes."""
    ANSWER_MISMATCHES.clear()
    yield
    assert not ANSWER_MISMATCHES, ANSWER_MISMATCHES[:5]


@pytest.fixture
def fresh(service: LocalService) -> LocalService:
    """A service with empty storage: moto is reset before each test that asks for it."""
    service.reset()
    return service


@pytest.fixture
def api(fresh: LocalService) -> Api:
    return Api(fresh.url, fresh.operator_key)
