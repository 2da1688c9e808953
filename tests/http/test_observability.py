"""One structured log line and one EMF document per handled request, with the Lambda context, and no secrets
(through the real handlers, against the local gateway's storage)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_memory.core import observability
from agent_memory.edges.http.lambda_entry import entry
from agent_memory.edges.tools.lambda_entry import handler as tool_handler

from ..support import Api

ROOT = Path(__file__).resolve().parents[2]
SECRET_CONTENT = "the launch code is 0000"


@dataclass
class FakeContext:
    """The attributes of Lambda's context object that the logs read."""

    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678"
    function_name: str = "ConversationMemoryWriteFunction"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:ConversationMemoryWriteFunction"


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """Everything the container's Logger writes from here on, at INFO (the suite runs at ERROR)."""
    log = observability.logger()
    buf = io.StringIO()
    handler: Any = log.registered_handler
    old_stream, old_level = handler.setStream(buf), log.log_level
    log.setLevel("INFO")
    yield buf
    log.setLevel(old_level)
    handler.setStream(old_stream)


@pytest.fixture
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """EMF documents printed, as in Lambda (the suite disables them); Powertools reads the switch per flush."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")


def emf_docs(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The EMF documents printed to stdout since the last call."""
    out = capsys.readouterr().out
    return [d for d in (json.loads(line) for line in out.splitlines() if line.startswith("{")) if "_aws" in d]


def parsed(buf: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def write_event(token: str, ws: str, conv: str) -> dict[str, Any]:
    """The generated sample event for conversation_memory_write, aimed at a real conversation."""
    event: dict[str, Any] = json.loads((ROOT / "events" / "conversation_memory_write.json").read_text())
    event["headers"]["authorization"] = f"Bearer {token}"
    event["pathParameters"] = {"workspace_public_id": ws, "conversation_public_id": conv}
    event["body"] = json.dumps(
        {
            "memory": {
                "path": "conversation/plan.md",
                "content": SECRET_CONTENT,
                "expected_public_id": None,
                "expected_lock_version": None,
            }
        }
    )
    return event


def test_a_request_logs_one_line_with_the_lambda_context_and_no_token_or_content(
    api: Api, log_lines: io.StringIO
) -> None:
    # Given a conversation and its owner's bearer token
    owner, ws, conv = api.room()
    handler = entry("conversation_memory_write")
    log_lines.seek(0)  # drop the lines of the gateway building the room (same process, same Logger)
    log_lines.truncate()

    # When the Lambda handler writes a document, then writes it again as new (a refusal)
    created = handler(write_event(owner.token, ws, conv), FakeContext())
    refused = handler(write_event(owner.token, ws, conv), FakeContext(aws_request_id="second-request"))

    # Then each request wrote exactly one line: route, status, code, time, and the Lambda context
    assert created["statusCode"] == 201, created["body"]
    refusal_code = json.loads(refused["body"])["error"]["code"]
    lines = parsed(log_lines)
    assert [line["message"] for line in lines] == ["request", "request"]
    first, second = lines
    assert first["route"] == second["route"] == "conversation_memory_write"
    assert first["status"] == 201
    assert "error_code" not in first  # Powertools leaves out keys whose value is None
    assert (second["status"], second["error_code"]) == (refused["statusCode"], refusal_code)
    assert isinstance(first["ms"], float) and first["ms"] >= 0
    assert first["function_request_id"] == FakeContext.aws_request_id
    assert second["function_request_id"] == "second-request"
    assert first["function_name"] == "ConversationMemoryWriteFunction"
    assert first["service"] == "agent-memory"
    # And neither the token, nor its secret part, nor the document's text reached the log
    text = log_lines.getvalue()
    secret = owner.token.rsplit("_", 1)[1]
    assert owner.token not in text and secret not in text
    assert SECRET_CONTENT not in text


@pytest.mark.usefixtures("fresh", "metrics_on")
def test_a_refusal_counts_under_its_code_and_every_request_under_its_route(capsys: pytest.CaptureFixture[str]) -> None:
    # Given metrics on, When a request is refused for want of a valid token
    token = "am_h_" + "0" * 32 + "_" + "s" * 40
    handler = entry("conversation_memory_write")
    reply = handler(
        write_event(token, "01990000-0000-7000-8000-000000000001", "01990000-0000-7000-8000-000000000002"), None
    )
    assert reply["statusCode"] == 401
    # Then one EMF document was flushed: Requests by route, Refusals by code (and by route)
    docs = emf_docs(capsys)
    assert len(docs) == 1
    doc = docs[0]
    (definition,) = doc["_aws"]["CloudWatchMetrics"]
    assert definition["Namespace"] == "AgentMemory"
    assert {m["Name"] for m in definition["Metrics"]} == {"Requests", "Refusals"}
    assert sorted(map(sorted, definition["Dimensions"])) == [["error_code", "service"], ["route", "service"]]
    assert (doc["route"], doc["error_code"], doc["service"]) == (
        "conversation_memory_write",
        "not_authenticated",
        "agent-memory",
    )
    assert doc["Requests"] == [1.0] and doc["Refusals"] == [1.0]
    assert token not in json.dumps(doc)

    # When a request succeeds (the public schemas), Then it counts under its route with no refusal
    assert (
        entry("tool_schemas")(json.loads((ROOT / "events" / "tool_schemas.json").read_text()), None)["statusCode"]
        == 200
    )
    (doc,) = emf_docs(capsys)
    assert doc["Requests"] == [1.0] and "Refusals" not in doc and "error_code" not in doc
    assert doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["route", "service"]]


@pytest.mark.usefixtures("metrics_on")
def test_the_tool_lambda_records_its_refusals_too(capsys: pytest.CaptureFixture[str]) -> None:
    # Given metrics on, When the in-account tool Lambda gets an event without its input
    out = tool_handler({"execution": "01990000-0000-7000-8000-000000000001", "tool": "memory_ls"}, FakeContext())
    # Then its refusal is counted under the tool door's route, never under the invoker's tool string
    assert out["error"]["code"] == "parameter_missing"
    (doc,) = emf_docs(capsys)
    assert (doc["route"], doc["error_code"], doc["Refusals"]) == ("tool_invoke", "parameter_missing", [1.0])


def test_with_metrics_disabled_nothing_reaches_stdout_even_past_powertools_buffer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given the suite's POWERTOOLS_METRICS_DISABLED=true, When more requests than Powertools buffers (100) run
    handler = entry("tool_schemas")
    event = json.loads((ROOT / "events" / "tool_schemas.json").read_text())
    for _ in range(150):
        assert handler(event, None)["statusCode"] == 200
    # Then no EMF document was printed, and nothing is left waiting in the buffer
    assert emf_docs(capsys) == []
    assert observability.metrics().provider.metric_set == {}
