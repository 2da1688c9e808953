"""Logs and metrics for every Lambda: one Powertools Logger and one Metrics per container, made on first use.

Importing this module costs about 1 ms (standard library only): Powertools (about 40 ms of imports) loads
inside the factories, the first time a handler logs. There is no Tracer: `Tracer()` alone, with the X-Ray
SDK, measured ~290 ms of cold start.

A handler calls `bind_lambda_context(context)` when it starts, so every line it logs carries the Lambda
request id and function name, and `record_request(...)` once when it has answered: that writes the one
structured line per request and flushes the invocation's metrics as one EMF document. Callers pass names,
statuses and codes only: never a token, a header or document content.
"""

from __future__ import annotations

import os
import threading
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Re-exported for annotations elsewhere (`observability.Logger`) without importing Powertools at runtime.
    from aws_lambda_powertools.logging import Logger as Logger
    from aws_lambda_powertools.metrics import Metrics as Metrics

SERVICE = "agent-memory"
NAMESPACE = "AgentMemory"

# Metric names (namespace AgentMemory, dimension `service` always).
REQUESTS = "Requests"
REFUSALS = "Refusals"
# Stored content whose bytes no longer hash to what its version recorded (store/content.py): alarm on > 0.
CONTENT_CORRUPT = "ContentCorrupt"

# Metrics buffers are class-level in Powertools and the local gateway serves on threads: one request's
# dimensions, metrics and flush must not interleave with another's.
_metrics_lock = threading.Lock()
_cold_start = True


def _service() -> str:
    return os.environ.get("POWERTOOLS_SERVICE_NAME") or SERVICE


@cache
def logger() -> Logger:
    """The container's structured JSON logger (level from POWERTOOLS_LOG_LEVEL)."""
    from aws_lambda_powertools.logging import Logger

    return Logger(service=_service())


@cache
def metrics() -> Metrics:
    """The container's EMF metrics; POWERTOOLS_METRICS_DISABLED=true (local runs, tests) prints nothing."""
    from aws_lambda_powertools.metrics import Metrics

    return Metrics(
        service=_service(),
        namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE,
    )


def bind_lambda_context(context: Any) -> None:
    """Tag every following log line of this invocation with the Lambda context's request id and function.

    The keys of `Logger.inject_lambda_context` at the same cost, without a decorator, which would need the
    Logger (and Powertools) when each function's module is imported. Thread-local keys, because the local
    gateway runs handlers on threads; replaced on every call, so a line never carries an earlier
    invocation's request id.
    """
    global _cold_start
    log = logger()
    log.thread_safe_clear_keys()
    if context is None:
        return
    cold = _cold_start and os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") != "provisioned-concurrency"
    _cold_start = False
    # The keys Powertools' inject_lambda_context adds, so queries written for Powertools logs work here.
    log.thread_safe_append_keys(
        cold_start=cold,
        function_name=getattr(context, "function_name", None),
        function_memory_size=getattr(context, "memory_limit_in_mb", None),
        function_arn=getattr(context, "invoked_function_arn", None),
        function_request_id=getattr(context, "aws_request_id", None),
    )


def record_request(
    route: str,
    *,
    status: int | None,
    error_code: str | None,
    ms: float,
    message: str = "request",
    **fields: str | int | float | bool | None,
) -> None:
    """Log the one line for a handled request and flush its metrics.

    `route` is the route or verb name (a fixed set, so it is safe as a metric dimension); `error_code` is
    the refusal's code from errors.py or None; `status` is None where there is no HTTP (the tool Lambda).
    `fields` are extra scalar log keys, e.g. the tool name: never tokens, headers or content.
    """
    line: dict[str, Any] = {"route": route}
    if status is not None:
        line["status"] = status
    line.update(fields)
    line["error_code"] = error_code
    line["ms"] = ms
    # stacklevel 3: the line's `location` names the handler that answered, not this function.
    logger().info(message, extra=line, stacklevel=3)
    _count(route, error_code)


def _count(route: str, error_code: str | None) -> None:
    # One EMF document per invocation. Its first dimension set, (service, route), gives the count per verb;
    # a refusal adds `Refusals` and a second set, (service, error_code), so one metric counts refusals by
    # code across every route (what an alarm on internal_error or a dashboard of conflicts wants) and is
    # still split by route under the first set. The code is a dimension rather than part of a metric name
    # because CloudWatch graphs, alarms and SEARCH work across a dimension's values but not across metric
    # names; both are bounded (errors.py's catalogue, the route table), which keeps the number of custom
    # metrics fixed. EMF applies every set to every metric of the document, so `Requests` also appears per
    # code: a duplicate of `Refusals` under that set, at most one extra custom metric per code.
    if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() in ("1", "true"):
        # Nothing would be printed: skip building the document (~50 us a request, measured by tests/bench.py).
        return
    with _metrics_lock:
        m = metrics()
        m.add_dimension(name="route", value=route)
        m.add_metric(name=REQUESTS, unit="Count", value=1)
        if error_code:
            m.add_metric(name=REFUSALS, unit="Count", value=1)
            # Powertools adds `service` to the first set only; the second names it itself.
            m.add_dimensions(service=_service(), error_code=error_code)
        try:
            m.flush_metrics()
        finally:
            # A disabled flush keeps the buffer, which would grow until Powertools prints it at 100 values.
            m.clear_metrics()


def content_corrupt(*, key: str, path: str, lock_version: int, size: int | None) -> None:
    """An object whose bytes failed their integrity check: one ERROR line and one `ContentCorrupt` metric,
    published at once (a read that skips the document still answers 200, so the request's own flush may
    carry no error code). Names the object, never its content."""
    logger().error(
        "content failed its integrity check",
        extra={"content_key": key, "path": path, "lock_version": lock_version, "fetched_bytes": size},
        stacklevel=3,
    )
    if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() in ("1", "true"):
        return
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    with (
        _metrics_lock,
        single_metric(
            name=CONTENT_CORRUPT,
            unit=MetricUnit.Count,
            value=1,
            namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE,
        ) as metric,
    ):
        metric.add_dimension(name="service", value=_service())
