"""A property-based fuzz of every route, from the OpenAPI document the gateway serves (schemathesis).

Each operation gets schema-conforming and schema-violating requests (bodies, path and query parameters)
against the local gateway, as the room's owner; path parameters are filled with real ids half the time
so requests reach the domain, not only the glue's not_found. Every response must be no 5xx, declared
for its operation (status and content type), and, for an error, the described error body.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import requests
import schemathesis
from agent_memory.api.contract import ROUTES, TOOL_NAMES
from agent_memory.edges.http.openapi import document
from agent_memory_sdk.local.runtime import LocalService
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from ..support import API, Api

# Enough to reach every field of every body a few times; the whole fuzz stays near a minute on 2 cores.
EXAMPLES_PER_OPERATION = int(os.environ.get("AGENT_MEMORY_FUZZ_EXAMPLES", "25"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@dataclass
class Tally:
    requests: int = 0
    per_operation: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def _world(api: Api) -> tuple[str, dict[str, list[str]]]:
    """The owner's token and real values for every path parameter: a room, agents, an execution."""
    owner, ws, conv = api.room()
    program = api.agent(owner, "helper")
    definition = api.agent(owner, "scribe", kind="definition")
    api.member(owner, ws, program)
    started = api.post(f"/workspaces/{ws}/conversations/{conv}/executions", owner, {"execution": {}})
    assert started.status_code == 201, started.text
    execution = started.json()["execution"]["public_id"]
    made = api.post(
        "/memories",
        owner,
        {"memory": {"name": "runbooks", "description": "d", "files": [{"path": "a.md", "content": "alpha"}]}},
    )
    assert made.status_code == 201, made.text
    real = {
        "workspace_public_id": [ws],
        "conversation_public_id": [conv],
        "agent_public_id": [program.public_id, definition.public_id],
        "execution_public_id": [execution],
        "agent_name": ["scribe"],
        "tool_name": list(TOOL_NAMES),
        "memory_id": [made.json()["memory"]["memory_id"]],
    }
    return owner.token, real


def test_every_route_answers_as_its_openapi_document_says(fresh: LocalService) -> None:
    api = Api(fresh.url, fresh.operator_key)
    # Given the document the gateway serves, which is the one the route table generates
    served = requests.get(f"{fresh.url}{API}/openapi.json", timeout=30)
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    assert served.json() == json.loads(json.dumps(document()))
    token, real = _world(api)
    schema = schemathesis.openapi.from_dict(served.json())
    session = requests.Session()
    tally = Tally()
    started = time.monotonic()
    operations = []
    for result in schema.get_all_operations():
        # The document is generated, so an operation schemathesis cannot read is a bug in openapi.py
        assert isinstance(result, Ok), result.err()
        operations.append(result.ok())
    assert sorted(op.definition.raw["operationId"] for op in operations) == sorted(r.name for r in ROUTES)

    for operation in operations:
        strategy = st.one_of(
            operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
            operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
        )

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,  # the same requests on every run, so CI's verdict is reproducible
            phases=[Phase.explicit, Phase.generate],  # failures are collected, not shrunk
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy, data=st.data())
        def one(case: Any, data: st.DataObject) -> None:
            # Real ids half the time, so requests get past not_found into the verbs themselves
            for name in list(case.path_parameters):
                if name in real and data.draw(st.booleans()):
                    case.path_parameters[name] = data.draw(st.sampled_from(real[name]))
            headers = {"Authorization": f"Bearer {token}", "X-Operator-Key": fresh.operator_key}
            response = case.call(base_url=fresh.url, session=session, headers=headers, timeout=30)
            tally.requests += 1
            tally.per_operation[case.operation.label] = tally.per_operation.get(case.operation.label, 0) + 1
            tally.statuses[response.status_code] = tally.statuses.get(response.status_code, 0) + 1
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except Exception as failure:  # a FailureGroup naming each check that failed
                tally.failures.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}\n"
                    f"    {str(failure)[:600]}"
                )

        one()

    elapsed = time.monotonic() - started
    # Then no response was a 5xx or off the document, and the run is reported
    print(
        f"\nfuzz: {tally.requests} requests over {len(operations)} operations in {elapsed:.0f}s; "
        f"statuses {dict(sorted(tally.statuses.items()))}; {len(tally.failures)} off the document"
    )
    assert set(tally.per_operation) == {op.label for op in operations}, "an operation was never called"
    assert not tally.failures, "\n".join(tally.failures[:20])
