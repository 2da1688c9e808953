"""`agent-memory`: run the service locally."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_memory_sdk.client import MemoryClient
    from agent_memory_sdk.local.mount import Report


def _serve(args: argparse.Namespace) -> int:
    from agent_memory_sdk.local.durable import DataDirError
    from agent_memory_sdk.local.runtime import Storage, project_root, start_local

    root = project_root()
    storage = Storage.from_environment(
        root,
        data_dir=args.data_dir,
        ephemeral=True if args.ephemeral else None,
        storage_port=args.storage_port,
        repair=args.repair,
    )
    try:
        service = start_local(port=args.port, root=root, storage=storage)
    except DataDirError as exc:
        print(f"agent-memory serve: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"agent-memory serve: cannot start ({exc}); is the port in use? Pass --port / --storage-port.",
            file=sys.stderr,
        )
        return 2
    moto = service.moto
    report = moto.report if moto is not None else None
    if report is not None:
        print(
            f"agent-memory serve: {storage.data_dir}: generation {report.generation}, "
            f"{report.snapshot_records} snapshot records and {report.replayed} journaled changes loaded "
            f"in {report.seconds:.1f} s",
            file=sys.stderr,
        )
        for dropped in report.dropped:
            print(f"agent-memory serve: --repair dropped {dropped}", file=sys.stderr)
    print(
        json.dumps(
            {
                "url": service.url,
                "operator_key": service.operator_key,
                # storage_url lets `AWS_ENDPOINT_URL=<it> agent-memory sweep` reach this process's storage.
                "storage_url": moto.url if moto is not None else None,
                "data_dir": str(storage.data_dir) if moto is not None and storage.data_dir else None,
            }
        ),
        flush=True,
    )
    stop = threading.Event()
    interval = _sweep_interval()
    if interval is not None and moto is not None:
        threading.Thread(target=_sweep_every, args=(interval, stop), name="sweep", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    service.stop()
    return 0


# As the deployed stack's schedule (template.yaml: rate(1 hour), a 15-minute grace, 30 s to settle): a
# server kept running for days keeps what deletes and retention leave no longer than AWS would.
SWEEP_INTERVAL_SECONDS = 3600


def _sweep_interval() -> float | None:
    """AGENT_MEMORY_SWEEP_INTERVAL_SECONDS: seconds between the local server's own sweeps, or `off`."""
    import os

    text = os.environ.get("AGENT_MEMORY_SWEEP_INTERVAL_SECONDS", "").strip().lower()
    if text == "off":
        return None
    try:
        return max(1.0, float(text)) if text else float(SWEEP_INTERVAL_SECONDS)
    except ValueError:
        print(
            f"agent-memory serve: AGENT_MEMORY_SWEEP_INTERVAL_SECONDS={text!r} is not a number of seconds "
            "or `off`; sweeping hourly",
            file=sys.stderr,
        )
        return float(SWEEP_INTERVAL_SECONDS)


def _sweep_every(interval: float, stop: threading.Event) -> None:
    from agent_memory.store.sweeper import DEFAULT_GRACE_SECONDS, sweep_configured

    while not stop.wait(interval):
        try:
            report = sweep_configured(grace_seconds=DEFAULT_GRACE_SECONDS, settle_seconds=30)
        except Exception as exc:  # the next hour tries again; the server goes on either way
            print(f"agent-memory serve: the hourly sweep failed ({exc})", file=sys.stderr)
            continue
        print(f"agent-memory serve: swept: {json.dumps(report.as_json())}", file=sys.stderr, flush=True)


def _sweep(args: argparse.Namespace) -> int:
    """One sweep against the storage the environment names (TABLE_NAME, BUCKET_NAME, AWS_ENDPOINT_URL)."""
    from agent_memory.store.sweeper import MIN_SAFE_GRACE_SECONDS, sweep_configured

    if args.grace_seconds < MIN_SAFE_GRACE_SECONDS and not args.force:
        # Refused before touching storage: this grace can delete a version whose write has yet to commit.
        print(
            f"agent-memory sweep: a grace of {args.grace_seconds:g} seconds is below the floor of "
            f"{MIN_SAFE_GRACE_SECONDS} seconds (the longest a write takes between storing its content and "
            "committing it), so it could delete content a write is about to point at; pass --force if no "
            "write can be in flight.",
            file=sys.stderr,
        )
        return 2
    _local_credentials()
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        report = sweep_configured(
            grace_seconds=args.grace_seconds,
            settle_seconds=args.settle_seconds,
            dry_run=args.dry_run,
            progress=_progress,
            sleep=_ticking_sleep,
        )
    except (BotoCoreError, ClientError) as exc:
        # No storage to reach (no endpoint, no credentials, no table): say so in one line, not a traceback.
        _unreachable("sweep", exc)
        return 2
    print(json.dumps(report.as_json()), flush=True)
    return 0


def _local_credentials() -> None:
    import os
    from urllib.parse import urlsplit

    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint and urlsplit(endpoint).hostname in ("127.0.0.1", "localhost", "::1"):
        # A local emulator (the one `serve` prints as storage_url) accepts any credentials.
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")


def _unreachable(command: str, exc: Exception) -> None:
    print(
        f"agent-memory {command}: cannot reach the storage ({exc}). Set AWS_ENDPOINT_URL to the storage_url that "
        "`agent-memory serve` printed, or AWS credentials for a deployed stack.",
        file=sys.stderr,
    )


def _reindex_records(args: argparse.Namespace) -> int:
    """Backfill the record search index of workspaces made before it (TABLE_NAME, AWS_ENDPOINT_URL)."""
    _local_credentials()
    from agent_memory.api.errors import ApiError
    from agent_memory.domain.records.service import reindex
    from agent_memory.domain.records.text import INDEX_VERSION
    from agent_memory.store import get_store
    from botocore.exceptions import BotoCoreError, ClientError

    store = get_store()
    out: dict[str, Any] = {}
    try:
        wanted = list(args.workspace or ()) or store.workspaces_to_reindex(INDEX_VERSION)
        for ws_id in wanted:
            done = reindex(store, ws_id, partial(_say, f"reindex-records: {ws_id}"))
            out[ws_id] = {"records": done.records, "postings": done.postings, "withdrawn": done.withdrawn}
    except ApiError as exc:
        print(f"agent-memory reindex-records: {exc.message}", file=sys.stderr)
        return 2
    except (BotoCoreError, ClientError) as exc:
        _unreachable("reindex-records", exc)
        return 2
    print(json.dumps({"index_version": INDEX_VERSION, "workspaces": out}), flush=True)
    return 0


def _say(what: str, step: str) -> None:
    print(f"agent-memory {what}: {step}", file=sys.stderr, flush=True)


def _progress(step: str) -> None:
    # stderr: stdout carries only the JSON summary, for scripts to read.
    print(f"agent-memory sweep: {step}", file=sys.stderr, flush=True)


TICK_SECONDS = 5.0


def _ticking_sleep(seconds: float) -> None:
    """The settle wait, saying every few seconds how long is left: a sweep never sits silent for 30 s."""
    import time

    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(TICK_SECONDS, left))
        if end - time.monotonic() > 0.5:
            _progress(f"{end - time.monotonic():.0f} s left to wait")


def _seconds(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def _mcp(args: argparse.Namespace) -> int:
    # Imported here: the mcp package (and anyio, starlette...) is only worth loading for this command.
    from agent_memory_sdk.local.mcp_server import run

    return run(args)


def _service_arguments(parser: argparse.ArgumentParser) -> None:
    """The service and the principal to act as: what `mcp`, `mount` and `sync` all take."""
    import os

    parser.add_argument(
        "--url",
        default=os.environ.get("AGENT_MEMORY_URL", "http://127.0.0.1:3000"),
        help="the service's base URL (default: $AGENT_MEMORY_URL or http://127.0.0.1:3000)",
    )
    parser.add_argument("--token", help="the bearer token to act as (default: $AGENT_MEMORY_TOKEN; required)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per HTTP call (default 10)")


def _mcp_arguments(parser: argparse.ArgumentParser) -> None:
    _service_arguments(parser)
    parser.add_argument("--workspace", required=True, help="the workspace's public_id (required; no default)")
    parser.add_argument("--conversation", required=True, help="the conversation's public_id (required; no default)")
    parser.add_argument(
        "--execution",
        help="an execution to run the tools in (default: start a new one for the conversation, all tools on)",
    )
    parser.add_argument(
        "--speaker", help="the Speaker a new execution speaks with, its speaker/ subject (default: none)"
    )
    parser.add_argument(
        "--block-budget", type=int, help="the memory block's byte budget (default: the service's, 16384 bytes)"
    )


def _client(args: argparse.Namespace) -> MemoryClient | None:
    import os

    from agent_memory_sdk.client import MemoryClient

    token = args.token or os.environ.get("AGENT_MEMORY_TOKEN")
    if not token:
        print(f"agent-memory {args.command}: pass --token or set AGENT_MEMORY_TOKEN", file=sys.stderr)
        return None
    return MemoryClient(args.url, token, timeout=args.timeout)


def _report(report: Report) -> None:
    print(json.dumps(report.as_json()), flush=True)


def _mount(args: argparse.Namespace) -> int:
    from agent_memory_sdk.local.mount import mount, watch

    client = _client(args)
    if client is None:
        return 2
    report = mount(client, args.execution, args.dir)
    _report(report)
    if report.mount_status or not args.watch:
        return report.mount_status
    stop = threading.Event()
    # Either signal ends the watch between two syncs, never in the middle of one.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    last: list[dict[str, Any]] = []

    def changed(report: Report) -> None:
        # A line only when a sync did or found something new: a quiet tree, or a conflict still waiting,
        # does not print the same line every few seconds.
        now = report.as_json()
        if report.eventful and last != [now]:
            _report(report)
        last[:] = [now]

    return watch(client, args.dir, interval=args.interval, stop=stop, on_report=changed)


def _sync(args: argparse.Namespace) -> int:
    from agent_memory_sdk.local.mount import sync

    client = _client(args)
    if client is None:
        return 2
    report = sync(client, args.dir, keep_local=args.keep_local)
    _report(report)
    return report.status


def _interval(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Every command and option; each option's help says its default (tests/unit/test_cli_help.py holds it)."""
    parser = argparse.ArgumentParser(prog="agent-memory", description="Agent memory, locally.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="serve every route of template.yaml on 127.0.0.1",
        description="Serve every route of template.yaml on 127.0.0.1, on an embedded DynamoDB and S3 (moto) whose "
        "data is kept in a folder across restarts (or on the storage AWS_ENDPOINT_URL names). Prints one JSON line "
        "when ready: url, operator_key, storage_url, data_dir.",
    )
    serve.add_argument("--port", type=int, default=3000, help="the HTTP API's port (default 3000; 0 picks one)")
    serve.add_argument(
        "--data-dir",
        metavar="DIR",
        help="where the data lives (default: $AGENT_MEMORY_DATA_DIR, else .agent-memory/ in the checkout)",
    )
    serve.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep nothing: start empty and forget everything at exit (default: off, unless AGENT_MEMORY_EPHEMERAL=1)",
    )
    serve.add_argument(
        "--repair",
        action="store_true",
        help="start on a damaged data folder: keep everything before the damage, move the rest aside, say what "
        "(default: off: a damaged folder stops the start)",
    )
    serve.add_argument(
        "--storage-port",
        type=int,
        help="the embedded storage endpoint's port (default: $AGENT_MEMORY_STORAGE_PORT, else any free one)",
    )
    serve.set_defaults(func=_serve)
    sweep = sub.add_parser(
        "sweep",
        help="delete content versions no row references (prints a JSON summary)",
        description="One sweep of the storage the environment names (AWS_ENDPOINT_URL: the storage_url `serve` "
        "printed, or a deployed stack's with TABLE_NAME and BUCKET_NAME): deletes version records and content "
        "objects no row references any more. Each step is printed on stderr as it runs; the JSON summary goes "
        "to stdout.",
    )
    sweep.add_argument(
        "--grace-seconds",
        type=_seconds,
        default=15 * 60,
        help="keep unreferenced versions younger than this: a write may not have committed yet "
        "(default 900; below 60 needs --force)",
    )
    sweep.add_argument(
        "--settle-seconds",
        type=_seconds,
        default=30,
        help="wait this long after the scan before reading the fork log, longer than a fork runs; the wait "
        "prints how long is left (default 30)",
    )
    sweep.add_argument(
        "--dry-run", action="store_true", help="report what would be deleted, delete nothing (default: off)"
    )
    sweep.add_argument(
        "--force",
        action="store_true",
        help="allow a grace below 60 seconds, only when no write can be in flight (default: off)",
    )
    sweep.set_defaults(func=_sweep)
    rix = sub.add_parser(
        "reindex-records",
        help="build the record search index of workspaces made before it (prints a JSON summary)",
        description="Write the search postings of every record of the workspaces named (or, without --workspace, "
        "of every workspace not yet indexed) in the storage the environment names (AWS_ENDPOINT_URL: the "
        "storage_url `serve` printed, or a deployed stack's with TABLE_NAME), then mark each indexed: its "
        "searches stop reading every record. Safe while the service runs, and to run again.",
    )
    rix.add_argument(
        "--workspace",
        action="append",
        metavar="ID",
        help="a workspace to reindex, may be repeated (default: every workspace not yet indexed)",
    )
    rix.set_defaults(func=_reindex_records)
    mcp = sub.add_parser(
        "mcp",
        help="serve one conversation's memory tools and block to an MCP client (stdio)",
        description="An MCP server over stdio: one execution's memory tools (the names of GET /tools/schemas), "
        "Claude's memory tool as `memory`, and the memory block as the resource memory://block.",
    )
    _mcp_arguments(mcp)
    mcp.set_defaults(func=_mcp)
    mnt = sub.add_parser(
        "mount",
        help="materialise an execution's mounts as files under a directory",
        description="Write an execution's mounts (GET /executions/{e}/mounts) as files under --dir and print a "
        "JSON report; with --watch, sync every --interval seconds until SIGINT or SIGTERM.",
    )
    _service_arguments(mnt)
    mnt.add_argument("--execution", required=True, help="the execution whose mounts to materialise (required)")
    mnt.add_argument("--dir", required=True, help="the directory to materialise them in (required)")
    mnt.add_argument(
        "--watch", action="store_true", help="then sync every --interval seconds until stopped (default: off)"
    )
    mnt.add_argument("--interval", type=_interval, default=5.0, help="seconds between syncs with --watch (default 5)")
    mnt.set_defaults(func=_mount)
    syn = sub.add_parser(
        "sync",
        help="push local changes under read-write mounts, then pull the service's",
        description="Push the changes under a mounted directory's read-write mounts as conditional writes, then "
        "pull what others changed; print a JSON report. Exit 0 in sync, 1 with something left unpushed, 2 on an "
        "error.",
    )
    _service_arguments(syn)
    syn.add_argument("--dir", required=True, help="a directory `agent-memory mount` materialised (required)")
    syn.add_argument(
        "--keep-local",
        metavar="PATH",
        help="settle PATH's conflict by writing the local copy over the service's (default: none)",
    )
    syn.set_defaults(func=_sync)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
