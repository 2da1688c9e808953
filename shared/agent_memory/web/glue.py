"""HTTP glue: API Gateway HTTP API (payload v2) events in, responses out; auth, parsing, error mapping.

The only module that builds HTTP responses. Route functions receive a parsed `Request` and return a
`Reply`; every `ApiError` becomes the seed's error body here, and anything unexpected a 500 with no detail.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import observability
from ..errors import ApiError
from ..ids import PresentedToken, is_uuid, parse_token
from ..memory import Condition

MAX_BODY_BYTES = 512 * 1024
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def logger() -> observability.Logger:
    """The container's one Logger (agent_memory.observability), kept here for modules that import it from glue."""
    return observability.logger()


@dataclass(slots=True)
class Request:
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any]
    token: PresentedToken | None
    request_id: str = ""


@dataclass(slots=True)
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Reply]


def _bearer(headers: dict[str, str]) -> PresentedToken | None:
    auth = headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return None
    return parse_token(token.strip())


def _parse_body(event: dict[str, Any]) -> dict[str, Any]:
    raw = event.get("body")
    if raw is None or raw == "":
        return {}
    if event.get("isBase64Encoded"):
        try:
            raw = base64.b64decode(raw).decode("utf-8")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError("parameter_invalid", "The request body is not valid UTF-8.") from exc
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError("parameter_invalid", f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    try:
        body = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or an integer past Python's 4300-digit parsing limit
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "a number is too long"
        raise ApiError("parameter_invalid", f"The request body is not valid JSON: {why}.") from exc
    if not isinstance(body, dict):
        raise ApiError("parameter_invalid", "The request body must be a JSON object.")
    return body


def to_request(event: dict[str, Any]) -> Request:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    ctx = event.get("requestContext") or {}
    return Request(
        method=(ctx.get("http") or {}).get("method", "GET"),
        path=event.get("rawPath", ""),
        params=dict(event.get("pathParameters") or {}),
        query=dict(event.get("queryStringParameters") or {}),
        headers=headers,
        body=_parse_body(event),
        token=_bearer(headers),
        request_id=ctx.get("requestId", ""),
    )


def _response(reply: Reply) -> dict[str, Any]:
    headers = {"content-type": "application/json", "cache-control": "no-store", **reply.headers}
    if reply.status == 204 or reply.body is None:
        return {"statusCode": reply.status, "headers": headers, "body": ""}
    return {"statusCode": reply.status, "headers": headers, "body": json.dumps(reply.body, ensure_ascii=False)}


def error_reply(err: ApiError) -> Reply:
    return Reply(err.status, err.body())


def dispatch(
    route_name: str, fn: Handler, event: dict[str, Any], *, needs_token: bool = True, context: Any = None
) -> dict[str, Any]:
    """Run one route function on one event; the single place errors become responses."""
    observability.bind_lambda_context(context)
    started = time.perf_counter()
    code = None
    try:
        req = to_request(event)
        if needs_token and req.token is None:
            # No or malformed credentials answer 401 before anything else is looked at.
            raise ApiError("not_authenticated", "Send a valid token as 'Authorization: Bearer <token>'.")
        reply = fn(req)
    except ApiError as err:
        code = err.code
        reply = error_reply(err)
    except Exception:
        code = "internal_error"
        logger().exception("unhandled error", extra={"route": route_name})
        reply = error_reply(ApiError("internal_error", "Something went wrong on our side; nothing was changed."))
    observability.record_request(
        route_name, status=reply.status, error_code=code, ms=round((time.perf_counter() - started) * 1000, 2)
    )
    return _response(reply)


# ---- body helpers: each refusal carries the seed's code ---------------------------------------------


def section(body: dict[str, Any], key: str) -> dict[str, Any]:
    """The request's top-level object, e.g. body["memory"]."""
    if key not in body:
        raise ApiError("parameter_missing", f"The request body needs a {key!r} object.")
    value = body[key]
    if not isinstance(value, dict):
        raise ApiError("parameter_invalid", f"{key!r} must be a JSON object.")
    return value


def required(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise ApiError("parameter_missing", f"{where}.{key} is required.")
    return obj[key]


def string(obj: dict[str, Any], key: str, where: str, *, max_len: int = 200, optional: bool = False) -> str | None:
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise ApiError("parameter_missing", f"{where}.{key} is required.")
    value = obj[key]
    # A lone surrogate ("\ud800" in the JSON) is not text and cannot be stored as UTF-8.
    if not isinstance(value, str) or not value.strip() or len(value) > max_len or _SURROGATE.search(value):
        raise ApiError("parameter_invalid", f"{where}.{key} must be a nonempty string of at most {max_len} characters.")
    return value


def uuid_field(obj: dict[str, Any], key: str, where: str, *, optional: bool = False) -> str | None:
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise ApiError("parameter_missing", f"{where}.{key} is required.")
    value = obj[key]
    if not is_uuid(value):
        raise ApiError("parameter_invalid", f"{where}.{key} must be a lowercase UUID.")
    return str(value)


def integer(
    obj: dict[str, Any], key: str, where: str, *, default: int | None = None, low: int = 0, high: int = 2**53
) -> int | None:
    if key not in obj or obj[key] is None:
        return default
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError("parameter_invalid", f"{where}.{key} must be a whole number from {low} to {high}.")
    return value


def boolean(obj: dict[str, Any], key: str, where: str, *, default: bool = False) -> bool:
    if key not in obj or obj[key] is None:
        return default
    value = obj[key]
    if not isinstance(value, bool):
        raise ApiError("parameter_invalid", f"{where}.{key} must be true or false.")
    return value


def condition(obj: dict[str, Any]) -> Condition:
    """Both expected fields are required; null/null means 'create only if absent'."""
    for key in ("expected_public_id", "expected_lock_version"):
        if key not in obj:
            raise ApiError(
                "parameter_missing",
                f"memory.{key} is required (null/null to create a new document, or the pair you last read).",
            )
    pid, lv = obj["expected_public_id"], obj["expected_lock_version"]
    if pid is not None and not is_uuid(pid):
        raise ApiError("parameter_invalid", "memory.expected_public_id must be null or the document's UUID.")
    # Bounded like every other integer: a version past DynamoDB's 38 digits would fail in the store as a 500.
    if lv is not None and (isinstance(lv, bool) or not isinstance(lv, int) or not 0 <= lv <= 2**53):
        raise ApiError(
            "parameter_invalid", "memory.expected_lock_version must be null or a whole number from 0 to 2**53."
        )
    if (pid is None) != (lv is None):
        raise ApiError(
            "parameter_invalid",
            "memory.expected_public_id and memory.expected_lock_version are null together or set together.",
        )
    return Condition(pid, lv)
