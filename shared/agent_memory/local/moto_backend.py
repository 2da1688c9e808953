"""An embedded moto server whose requests are serialised, plus table and bucket creation.

moto is not atomic across threads (its TransactWriteItems copies and restores whole tables), so
concurrent requests would lose writes and let conditions through that DynamoDB would refuse. One lock
around moto's WSGI app makes each request atomic, as DynamoDB is per request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server

from .template import resource_props

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def serialised(app: WSGIApp) -> WSGIApp:
    lock = threading.Lock()

    def locked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with lock:
            result = app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]

    return locked


class EmbeddedMoto:
    """moto's DynamoDB and S3 on 127.0.0.1, one request at a time."""

    def __init__(self, port: int = 0) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app  # type: ignore[attr-defined]

        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app = DomainDispatcherApplication(create_backend_app)
        self._server: BaseWSGIServer = make_server("127.0.0.1", port, serialised(app), threaded=True)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> EmbeddedMoto:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def create_resources(ddb: Any, s3: Any, template: dict[str, Any], table: str, bucket: str) -> None:
    """Create the table and bucket as template.yaml declares them, unless they exist already."""
    props = resource_props(template, "AWS::DynamoDB::Table")
    existing = ddb.list_tables().get("TableNames", [])
    if table not in existing:
        ddb.create_table(
            TableName=table,
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
        )
        ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    buckets = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if bucket not in buckets:
        s3.create_bucket(Bucket=bucket)
