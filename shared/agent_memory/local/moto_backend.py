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


def one_backup_per_transaction() -> None:
    """Make moto back a table up once per TransactWriteItems instead of once per item.

    moto 5 deep-copies the whole table for every item of a transaction (to restore it on cancel), so a
    fork's 67-item transaction costs 67 table copies: seconds once the table holds a few thousand items,
    which would drown what the service itself costs. All those copies are taken before any item is
    applied, so a single copy per table is the very same backup.
    """
    import copy

    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    if getattr(models, "_one_backup_per_transaction", False):
        return
    state = threading.local()

    class _Copy:
        def __getattr__(self, name: str) -> Any:
            return getattr(copy, name)

        @staticmethod
        def deepcopy(obj: Any, memo: dict[int, Any] | None = None) -> Any:
            backups: dict[int, Any] | None = getattr(state, "backups", None)
            if backups is None or not isinstance(obj, Table):
                return copy.deepcopy(obj, memo)
            if id(obj) not in backups:
                backups[id(obj)] = copy.deepcopy(obj, memo)
            return backups[id(obj)]

    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        state.backups = {}
        try:
            original(self, transact_items)
        finally:
            state.backups = None

    models.copy = _Copy()  # type: ignore[attr-defined,assignment]
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    models._one_backup_per_transaction = True  # type: ignore[attr-defined]


class EmbeddedMoto:
    """moto's DynamoDB and S3 on 127.0.0.1, one request at a time."""

    def __init__(self, port: int = 0) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app  # type: ignore[attr-defined]

        one_backup_per_transaction()

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
