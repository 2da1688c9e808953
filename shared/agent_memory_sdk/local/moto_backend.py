"""An embedded moto server whose requests are serialised, plus table and bucket creation.

moto is not atomic across threads (its TransactWriteItems copies and restores whole tables), so
concurrent requests would lose writes and let conditions through that DynamoDB would refuse. One lock
around moto's WSGI app makes each request atomic, as DynamoDB is per request.
"""

from __future__ import annotations

import bisect
import io
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from werkzeug.serving import BaseWSGIServer, make_server

from agent_memory_sdk.local.durable import DataDir, OpenReport, call, is_change, open_data_dir
from agent_memory_sdk.local.template import resource_props

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def serialised(app: WSGIApp, data: DataDir | None = None) -> WSGIApp:
    """One request at a time; with a data folder, each change is journaled before it is answered."""
    lock = threading.Lock()

    def locked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        change = data is not None and is_change(environ)
        request = b""
        if change:
            length = environ.get("CONTENT_LENGTH")
            stream = environ["wsgi.input"]
            request = (
                stream.read(int(length)) if length else stream.read() if environ.get("wsgi.input_terminated") else b""
            )
            environ["wsgi.input"] = io.BytesIO(request)
        before = dict(environ)
        with lock:
            if change and data is not None and data.failed is None:
                status, headers, body = call(app, environ)
                if (200 <= status < 300 or status >= 500) and not data.record(before, request, status):
                    status = 503
            elif change and data is not None:
                status = 503
            else:
                status, headers, body = call(app, environ)
        if status == 503 and data is not None and data.failed is not None:
            # The journal could not be written: the change is not acknowledged, and none after it is accepted.
            headers = [("Content-Type", "application/json")]
            body = json.dumps({"__type": "ServiceUnavailable", "message": data.failed}).encode()
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]

    return locked


def _touched_keys(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """(table, hash key, range key) of every item a TransactWriteItems names, in request order.

    An item whose table or key moto cannot read is left out: moto refuses that item itself, and a
    refused item changes nothing there is to restore.
    """
    touched = []
    for entry in transact_items:
        try:
            (op_type, op), *_ = entry.items()
            table = backend.tables[op["TableName"]]
            key = op["Item"] if op_type == "Put" else op["Key"]
            touched.append((table, *backend.get_keys_value(table, key)))
        except Exception:
            continue
    return touched


def _restore(table: Any, hash_key: Any, range_key: Any, saved: Any) -> None:
    """Put one item back as it was before the transaction (absent stays absent)."""
    if range_key is None:
        if saved is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = saved
        return
    partition = table.items.get(hash_key)
    if saved is not None:
        table.items[hash_key][range_key] = saved
    elif partition is not None:
        partition.pop(range_key, None)
        if not partition:
            del table.items[hash_key]


def _string_keys(table: Any) -> bool:
    """Whether the table's keys are strings, whose order Python's own str order is (as moto's is)."""
    return bool(table.hash_key_type == "S" and table.range_key_type in (None, "S"))


def _string_key_of(table: Any, key: Any) -> bool:
    """Whether `key` is absent or names the table's key attributes as strings (else moto judges it)."""
    names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
    return key is None or (
        isinstance(key, dict) and all(isinstance(key.get(n), dict) and isinstance(key[n].get("S"), str) for n in names)
    )


def _items_after(table: Any, start: dict[str, Any] | None) -> Iterator[Any]:
    """The table's items in key order, from just after `start` (a Scan's ExclusiveStartKey), lazily.

    moto sorts the whole table with its own comparisons on every Scan page and then walks past the pages
    already read: a full Scan costs the square of the table. Sorting plain (hash, range) strings is the
    same order, done in C, and a bisection finds where the page starts.
    """
    if table.range_key_attr:
        rows = [(h.value, r.value, item) for h, part in table.items.items() for r, item in part.items()]
    else:
        rows = [(h.value, "", item) for h, item in table.items.items()]
    rows.sort(key=lambda row: (row[0], row[1]))
    at = 0
    if start:
        mark = (start[table.hash_key_attr]["S"], start[table.range_key_attr]["S"] if table.range_key_attr else "")
        at = bisect.bisect_right(rows, mark, key=lambda row: (row[0], row[1]))
    return (row[2] for row in rows[at:])


def _untracked(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


def patch_moto_for_scale() -> None:
    """Make moto's DynamoDB cost what a request touches, not what the table holds.

    moto 5 deep-copies every table a TransactWriteItems names so that a cancelled transaction can put the
    table back; a local write then costs time and memory in proportion to everything stored, and a few
    concurrent writes hold several copies at once. Instead, the items the transaction names are saved
    (at most 100, a copy each, since moto's update changes an item in place) and put back on any failure;
    moto's own logic still decides conditions, cancellation reasons and the order of effects.

    moto also answers a table Query by sorting every item of the table and keeping the partition asked
    for; a Query on the table (not an index) now starts from that one partition, which is the same list.
    A Scan page starts where the last one ended instead of sorting and walking the whole table again.
    And moto's models stop keeping a list of every instance they ever made.
    """
    import copy

    import moto.dynamodb.models as models
    from moto.core.common_models import BaseModel
    from moto.dynamodb.models.table import Table

    if getattr(models, "_agent_memory_scaled", False):
        return
    state = threading.local()

    class _Copy:
        """moto's `copy` module, except that the whole-table backup becomes the live table (a no-op restore)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(copy, name)

        @staticmethod
        def deepcopy(obj: Any, memo: dict[int, Any] | None = None) -> Any:
            if getattr(state, "in_transaction", False) and isinstance(obj, Table):
                return obj
            return copy.deepcopy(obj, memo)

    original_transact = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        saved = []
        if isinstance(transact_items, list) and len(transact_items) <= 100:
            for table, hash_key, range_key in _touched_keys(self, transact_items):
                saved.append((table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key))))
        state.in_transaction = True
        try:
            original_transact(self, transact_items)
        except BaseException:
            # Reversed: when one key is named twice (which moto refuses), the first save is the original.
            for table, hash_key, range_key, item in reversed(saved):
                _restore(table, hash_key, range_key, item)
            raise
        finally:
            state.in_transaction = False

    original_query = Table.query
    original_all_items = Table.all_items

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
        if index_name or hash_key is None:
            return original_query(self, hash_key, *args, **kwargs)
        state.partition = (self, hash_key)
        try:
            return original_query(self, hash_key, *args, **kwargs)
        finally:
            state.partition = None

    original_scan = Table.scan

    def scan(self: Any, filters: Any, limit: Any, exclusive_start_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[1] if len(args) > 1 else None)
        if index_name or not _string_keys(self) or not _string_key_of(self, exclusive_start_key):
            return original_scan(self, filters, limit, exclusive_start_key, *args, **kwargs)
        # The items come from `all_items` already past the start key, so moto skips nothing itself.
        state.scan_from = (self, exclusive_start_key)
        try:
            return original_scan(self, filters, limit, None, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            state.scan_from = None

    def all_items(self: Any) -> Any:
        partition = getattr(state, "partition", None)
        if partition is not None and partition[0] is self and self.range_key_attr:
            found = self.items.get(partition[1])
            return sorted(found.values(), key=lambda item: item.range_key) if found else []
        scan_from = getattr(state, "scan_from", None)
        if scan_from is not None and scan_from[0] is self:
            return _items_after(self, scan_from[1])
        return original_all_items(self)

    # moto's BaseModel keeps every instance it ever made (`instances_tracked`, for its model-data page,
    # which the service never asks for): every item, every copy of one and every S3 object stayed in
    # memory for good, about 40 MB per 1,000 writes of the soak. Made as plain objects, they go when
    # nothing holds them.
    BaseModel.__new__ = _untracked  # type: ignore[method-assign]

    models.copy = _Copy()  # type: ignore[attr-defined,assignment]
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    Table.query = query  # type: ignore[method-assign]
    Table.scan = scan  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]
    models._agent_memory_scaled = True  # type: ignore[attr-defined]


class EmbeddedMoto:
    """moto's DynamoDB and S3 on 127.0.0.1, one request at a time, kept in a data folder unless ephemeral."""

    def __init__(self, port: int = 0, data_dir: Path | None = None, repair: bool = False) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app  # type: ignore[attr-defined]

        patch_moto_for_scale()

        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app = DomainDispatcherApplication(create_backend_app)
        self.data: DataDir | None = None
        self.report: OpenReport | None = None
        if data_dir is not None:
            self.data, self.report = open_data_dir(data_dir, app, repair=repair)
        self.app = serialised(app, self.data)
        try:
            self._server: BaseWSGIServer = make_server("127.0.0.1", port, self.app, threaded=True)
        except OSError:
            if self.data is not None:
                self.data.close()
            raise
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> EmbeddedMoto:
        self._thread.start()
        return self

    def send(self, request: Any, **_: Any) -> Any:
        """botocore's `before-send`: answer a request to this storage in-process, through the same
        serialised (and journaled) app the HTTP endpoint serves, without a socket, a server thread or
        HTTP parsing on either side; a request to any other endpoint is left to botocore."""
        from botocore.awsrequest import AWSResponse, HTTPHeaders
        from moto.core.botocore_stubber import MockRawResponse

        parts = urlsplit(request.url)
        if f"{parts.scheme}://{parts.netloc}" != self.url:
            return None
        body = request.body
        if body is None:
            body = b""
        elif isinstance(body, str):
            body = body.encode("utf-8")
        elif not isinstance(body, bytes | bytearray):
            body = body.read()
        raw = parts.path + (f"?{parts.query}" if parts.query else "")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": request.method,
            "PATH_INFO": unquote_to_bytes(parts.path).decode("latin-1"),
            "QUERY_STRING": parts.query,
            "RAW_URI": raw,
            "REQUEST_URI": raw,
            "SERVER_NAME": parts.hostname or "127.0.0.1",
            "SERVER_PORT": str(parts.port or 80),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": parts.netloc,
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": parts.scheme,
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": io.StringIO(),
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in request.headers.items():
            text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
            key = name.upper().replace("-", "_")
            environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = text
        environ["CONTENT_LENGTH"] = str(len(body))
        status, headers, payload = call(self.app, environ)
        # Case-insensitive, as the headers of a real HTTP answer are to botocore's parsers.
        return AWSResponse(request.url, status, HTTPHeaders.from_pairs(headers), MockRawResponse(payload))

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self.data is not None:
            self.data.close()


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
