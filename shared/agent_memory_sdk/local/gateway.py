"""The local HTTP API: serves every route of template.yaml by calling the same Lambda handlers.

Each request becomes an API Gateway HTTP API (payload 2.0) event and is handed to the function's own
handler, loaded from its CodeUri, exactly as Lambda would call it. Binds to loopback only.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from agent_memory_sdk.local.template import DEFAULT_PATH, TemplateRoute, default_route, routes

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
# What every answer of the gateway's own carries, as the functions' answers do (edges/http/glue.py).
NOSNIFF = "X-Content-Type-Options"
NOT_FOUND = (
    404,
    {"content-type": "application/json", NOSNIFF: "nosniff", "cache-control": "no-store"},
    json.dumps({"message": "Not Found"}).encode(),
)


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog of 5 makes the kernel reset connections when a few dozen
    # clients connect at once (as the race tests do); API Gateway never refuses that way.
    request_queue_size = 512
    daemon_threads = True


class _LambdaContext:
    function_name = "local"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:local"
    aws_request_id = ""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def load_handler(root: Path, route: TemplateRoute) -> LambdaHandler:
    module_name, _, attr = route.handler.rpartition(".")
    path = root / route.code_uri / f"{module_name.replace('.', '/')}.py"
    spec = importlib.util.spec_from_file_location(f"_fn_{route.function}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    handler: LambdaHandler = getattr(module, attr)
    return handler


def build_event(
    route: TemplateRoute,
    method: str,
    raw_path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    params: dict[str, str],
) -> dict[str, Any]:
    qs: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        qs[k] = f"{qs[k]},{v}" if k in qs else v
    text = body.decode("utf-8", errors="surrogateescape") if body else None
    headers = dict(headers)
    # As API Gateway does: payload v2 carries the cookies apart from the headers.
    cookie = headers.pop("cookie", None)
    cookies = [c.strip() for c in cookie.split(";") if c.strip()] if cookie else None
    route_key = DEFAULT_PATH if route.path == DEFAULT_PATH else f"{route.method} {route.path}"
    return {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": headers,
        "queryStringParameters": qs or None,
        "pathParameters": params or None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": "127.0.0.1",
            "http": {
                "method": method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": text,
        "isBase64Encoded": False,
        **({"cookies": cookies} if cookies else {}),
    }


class Gateway:
    def __init__(self, root: Path, template: dict[str, Any], port: int = 3000) -> None:
        self.root = root
        self.routes = routes(template)
        self.default = default_route(template)
        served = [*self.routes, *([self.default] if self.default else [])]
        self.handlers: dict[str, LambdaHandler] = {r.function: load_handler(root, r) for r in served}
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The headers and the body go out as two writes; with Nagle on, the body waits for the
            # client's delayed ACK of the headers (about 40 ms on Linux), which every keep-alive
            # request then paid.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            # The server's own answers (a method no route has, a malformed request line) carry nosniff too.
            _nosniff = False

            def send_header(self, keyword: str, value: str) -> None:
                if keyword.lower() == NOSNIFF.lower():
                    self._nosniff = True
                super().send_header(keyword, value)

            def end_headers(self) -> None:
                if not self._nosniff:
                    super().send_header(NOSNIFF, "nosniff")
                self._nosniff = False
                super().end_headers()

            def _serve(self) -> None:
                gateway.serve(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        self.server = _Server(("127.0.0.1", port), Handler)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def match(self, method: str, path: str) -> tuple[TemplateRoute, dict[str, str]] | None:
        for r in self.routes:
            m = r.pattern.match(path)
            if m and r.method == method:
                return r, m.groupdict()
        return None

    def serve(self, req: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(req.path)
        length = int(req.headers.get("content-length") or 0)
        body = req.rfile.read(length) if length else b""
        found = self.match(req.command, parts.path)
        if found is None and self.default is not None:
            # As API Gateway does: what no route matches goes to the `$default` route's function.
            found = self.default, {}
        if found is None:
            # Without a `$default` route, API Gateway's HTTP API answers an unmatched route itself.
            status, headers, payload = NOT_FOUND
        else:
            route, params = found
            headers_in: dict[str, str] = {}
            for k, v in req.headers.items():
                k = k.lower()
                headers_in[k] = f"{headers_in[k]},{v}" if k in headers_in else v
            # The proxy says which protocol the client used, as API Gateway does (https there): here always
            # plain http, so the console's session cookie is not marked Secure on `make run`.
            headers_in.setdefault("x-forwarded-proto", "http")
            event = build_event(route, req.command, parts.path, parts.query, headers_in, body, params)
            result = self.handlers[route.function](event, _LambdaContext())
            status = result["statusCode"]
            headers = result.get("headers") or {}
            payload = (result.get("body") or "").encode()
        req.send_response(status)
        for k, v in headers.items():
            req.send_header(k, v)
        for c in [] if found is None else result.get("cookies") or []:
            req.send_header("set-cookie", c)
        req.send_header("content-length", str(len(payload)))
        req.end_headers()
        req.wfile.write(payload)

    def serve_forever(self) -> None:
        self.server.serve_forever()

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()
