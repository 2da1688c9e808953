"""Deletion that really removes content: deletes are immediate, and the sweeper removes the bytes.

The sweeper runs in this process against the same embedded moto the gateway's handlers use, so a test
can race it against HTTP writes and forks on real threads, and look at the bucket directly to see what
is really gone. The content cache is emptied before any "does it still read" check, so a read proves the
object is still in S3 rather than remembered by this process.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from agent_memory.core.settings import settings
from agent_memory.store import CACHE, aws_clients
from agent_memory.store.sweeper import SweepReport, handler, referenced_keys, sweep_configured
from agent_memory_sdk.local import cli
from agent_memory_sdk.local.template import load_template

from ..support import Api, Who, code, conv_base, pair, ws_base

ROOT = Path(__file__).resolve().parents[2]


def run_sweep(grace: float = 0.0, settle: float = 0.0, dry_run: bool = False) -> SweepReport:
    return sweep_configured(grace_seconds=grace, settle_seconds=settle, dry_run=dry_run)


def bucket() -> dict[str, str]:
    """Every content object in the bucket, key -> text, read straight from S3."""
    _, s3 = aws_clients()
    out: dict[str, str] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=settings().bucket_name, Prefix="content/"):
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=settings().bucket_name, Key=obj["Key"])["Body"].read()
            out[obj["Key"]] = body.decode("utf-8")
    return out


def stored_texts() -> list[str]:
    return sorted(bucket().values())


def fork(api: Api, who: Who, ws: str, conv: str) -> str:
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/fork", who)
    assert r.status_code == 201, r.text
    return str(r.json()["conversation"]["public_id"])


def listing(api: Api, who: Who, base: str) -> dict[str, tuple[str, int]]:
    r = api.ls(who, base)
    assert r.status_code == 200, r.text
    return {m["path"]: (m["public_id"], m["lock_version"]) for m in r.json()["memory"]}


# ---- delete ------------------------------------------------------------------------------------------


def test_a_delete_is_gone_at_once_for_every_reader(api: Api) -> None:
    # Given a conversation document and a workspace document, read by the owner and by a viewer
    ada, ws, conv = api.room()
    vic = api.human(ada, "vic")
    api.member(ada, ws, vic, role="viewer")
    base = conv_base(ws, conv)
    doc = api.write(ada, base, "conversation/secret.md", "launch code 1234")
    team = api.write(ada, base, "workspace/team.md", "launch code 1234")
    assert api.show(vic, base, "conversation/secret.md").status_code == 200

    # When both are deleted
    assert api.delete(ada, base, "conversation/secret.md", pair(doc)).status_code == 204
    assert api.delete(ada, ws_base(ws), "workspace/team.md", pair(team)).status_code == 204

    # Then no reader finds them through any verb or door, the deleter included
    for who in (ada, vic):
        assert code(api.show(who, base, "conversation/secret.md")) == (404, "memory_not_found")
        assert code(api.show(who, ws_base(ws), "workspace/team.md")) == (404, "memory_not_found")
        assert api.ls(who, base).json()["memory"] == []
        assert api.grep(who, base, "launch code").json()["matches"] == []
    # And the old pair cannot bring it back: the row is gone, not hidden
    assert code(api.delete(ada, base, "conversation/secret.md", pair(doc))) == (409, "stale_object")


# ---- the sweep ---------------------------------------------------------------------------------------


def test_after_delete_and_sweep_the_bytes_are_gone_but_content_a_fork_or_a_history_holds_survives(api: Api) -> None:
    # Given a parent with three documents, one of them rewritten, and a fork of it
    ada, ws, parent = api.room()
    pb = conv_base(ws, parent)
    kept = api.write(ada, pb, "conversation/kept.md", "kept by the fork")
    both = api.write(ada, pb, "conversation/both.md", "deleted on both sides")
    plan = api.write(ada, pb, "conversation/plan.md", "plan v0")
    plan = api.write(ada, pb, "conversation/plan.md", "plan v1", pair(plan))
    child = fork(api, ada, ws, parent)
    cb = conv_base(ws, child)
    # When the parent deletes kept.md and both.md, and the child deletes both.md too
    assert api.delete(ada, pb, "conversation/kept.md", pair(kept)).status_code == 204
    assert api.delete(ada, pb, "conversation/both.md", pair(both)).status_code == 204
    assert api.delete(ada, cb, "conversation/both.md", pair(both)).status_code == 204
    assert stored_texts() == sorted(["kept by the fork", "deleted on both sides", "plan v0", "plan v1"])

    # And the sweeper runs with no grace period
    report = run_sweep(grace=0)

    # Then what nothing points at any more is gone from the bucket: the document deleted on both sides; the
    # replaced version stays, since plan.md's history still holds it
    assert stored_texts() == sorted(["kept by the fork", "plan v0", "plan v1"])
    assert report.deleted == 1 and report.listed == 4 and report.failed == 0
    old = api.post(f"{pb}/versions/show", ada, {"memory": {"path": "conversation/plan.md", "lock_version": 0}})
    assert old.json()["version"]["content"] == "plan v0"
    # And everything still listed still reads, from S3 itself
    CACHE.clear()
    assert api.show(ada, cb, "conversation/kept.md").json()["memory"]["content"] == "kept by the fork"
    for base in (pb, cb):
        assert api.show(ada, base, "conversation/plan.md").json()["memory"]["content"] == "plan v1"
    # And a second sweep finds nothing more to do
    assert run_sweep(grace=0).deleted == 0


def test_a_refused_write_leaves_a_version_the_grace_period_keeps_and_a_later_sweep_removes(api: Api) -> None:
    # Given a document, and a write to it that loses a race after its version was stored: the competing
    # write lands while the loser stores its content (a refusal its own batch read could not foresee, so
    # it is the commit that refuses; a write already stale when read is refused before its PUT)
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    doc = api.write(ada, base, "conversation/plan.md", "current")
    _, s3 = aws_clients()
    raced = threading.Event()

    def competitor(**_: Any) -> None:
        if not raced.is_set():
            raced.set()
            assert api.write(ada, base, "conversation/plan.md", "newer", pair(doc)).status_code == 201

    s3.meta.events.register("before-call.s3.PutObject", competitor, unique_id="test-sweeper-race")
    try:
        lost = api.write(ada, base, "conversation/plan.md", "lost race", pair(doc))
    finally:
        s3.meta.events.unregister("before-call.s3.PutObject", unique_id="test-sweeper-race")
    assert code(lost) == (409, "stale_object")
    assert "lost race" in stored_texts()

    # When a sweep runs with a grace period longer than the orphans' age
    young = run_sweep(grace=600)

    # Then nothing young is deleted: a version this fresh may belong to a write that has not committed yet
    assert young.deleted == 0 and young.young == 1
    assert "lost race" in stored_texts()
    # And a dry run with no grace names what would go without removing it
    dry = run_sweep(grace=0, dry_run=True)
    assert (dry.eligible, dry.deleted, dry.young, dry.dry_run) == (1, 0, 0, True)
    assert "lost race" in stored_texts()
    # And once past the grace period the refused write's object is removed, while the current version and
    # the one it replaced (still in the document's history) stay
    assert run_sweep(grace=0).deleted == 1
    assert stored_texts() == ["current", "newer"]


@contextmanager
def hook(event: str, fn: Any) -> Iterator[None]:
    ddb, _ = aws_clients()
    ddb.meta.events.register(event, fn, unique_id=f"test-sweeper-{event}")
    try:
        yield
    finally:
        ddb.meta.events.unregister(event, unique_id=f"test-sweeper-{event}")


def _is_fork(params: dict[str, Any]) -> bool:
    return any(
        op.get("Put", {}).get("Item", {}).get("pk", {}).get("S", "").startswith("FORKLOG#")
        for op in params.get("TransactItems", [])
    )


def test_a_fork_that_commits_while_a_sweep_scans_keeps_the_content_it_copied(api: Api) -> None:
    # Given a parent whose only document is about to be forked and then deleted from the parent
    ada, ws, parent = api.room()
    pb = conv_base(ws, parent)
    doc = api.write(ada, pb, "conversation/plan.md", "forked plan")
    fork_read, scan_done, fork_done = threading.Event(), threading.Event(), threading.Event()

    def hold_fork(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        # The fork has listed the parent's rows; it may commit only once the sweep's scan has passed.
        if _is_fork(params):
            context["test_fork"] = True
            fork_read.set()
            assert scan_done.wait(10)

    def fork_committed(context: dict[str, Any], **_: Any) -> None:
        if context.get("test_fork"):
            fork_done.set()

    def scanned(**_: Any) -> None:
        scan_done.set()

    def before_log(params: dict[str, Any], **_: Any) -> None:
        # The sweeper reads the fork log after its settle wait; here the fork is let to finish first.
        if ":since" in params.get("ExpressionAttributeValues", {}):
            assert fork_done.wait(10)

    forked: dict[str, requests.Response] = {}
    reports: list[SweepReport] = []
    with (
        hook("before-parameter-build.dynamodb.TransactWriteItems", hold_fork),
        hook("after-call.dynamodb.TransactWriteItems", fork_committed),
        hook("after-call.dynamodb.Scan", scanned),
        hook("before-parameter-build.dynamodb.Query", before_log),
    ):
        # When a fork reads the parent's rows...
        forker = threading.Thread(
            target=lambda: forked.setdefault(
                "r", Api(api.url, api.operator_key).post(f"/workspaces/{ws}/conversations/{parent}/fork", ada)
            )
        )
        forker.start()
        assert fork_read.wait(10)
        # ...the parent deletes its row, so no row in the table points at the content any more...
        assert api.delete(ada, pb, "conversation/plan.md", pair(doc)).status_code == 204
        # ...and a sweep lists the bucket and scans the table before the fork's copy commits (its settle
        # time, the longest a fork may take, covers this fork's whole run)
        sweeper = threading.Thread(target=lambda: reports.append(run_sweep(grace=0, settle=1.0)))
        sweeper.start()
        forker.join(20)
        sweeper.join(20)

    # Then the scan alone saw no pointer to the content, but the fork log named it, so it was kept
    (report,) = reports
    assert report.referenced == 0 and report.fork_logged == 1 and report.deleted == 0
    # And the child's copy still reads from S3
    assert forked["r"].status_code == 201, forked["r"].text
    child = forked["r"].json()["conversation"]["public_id"]
    CACHE.clear()
    shown = api.show(ada, conv_base(ws, child), "conversation/plan.md")
    assert shown.status_code == 200 and shown.json()["memory"]["content"] == "forked plan"
    # And once the fork is older than the sweep's window and the child lets go too, the bytes go
    time.sleep(0.01)
    assert api.delete(ada, conv_base(ws, child), "conversation/plan.md", pair(doc)).status_code == 204
    assert run_sweep(grace=0).deleted == 1
    assert stored_texts() == []


GRACE = 2.0
SETTLE = 0.3
RUN_SECONDS = 4.0


def test_every_live_pointer_still_reads_after_sweeps_race_writes_and_forks(api: Api) -> None:
    # Given two conversations with eight documents each, old enough for the sweeper to consider
    ada, ws, first = api.room()
    roots = [first, api.conversation(ada, ws)]
    for conv in roots:
        for i in range(8):
            assert api.write(ada, conv_base(ws, conv), f"conversation/d{i}.md", f"{conv} d{i} v0").status_code == 201
    time.sleep(GRACE + 1.1)  # LastModified has one-second precision
    convs = list(roots)
    lock = threading.Lock()
    stop = threading.Event()
    failures: list[str] = []
    reports: list[SweepReport] = []

    def worker(seed: int) -> None:
        rnd = random.Random(seed)
        mine = Api(api.url, api.operator_key)
        n = 0
        while not stop.is_set():
            n += 1
            try:
                r = step(rnd, mine, seed, n)
            except Exception as exc:  # a dead thread would otherwise go unnoticed
                failures.append(repr(exc))
                return
            # Racing threads may see stale pairs or a full conversation; the service must never fail.
            if r.status_code >= 500:
                failures.append(f"{r.status_code} {r.text}")

    def step(rnd: random.Random, mine: Api, seed: int, n: int) -> requests.Response:
        with lock:
            conv = rnd.choice(convs)
        base = conv_base(ws, conv)
        if rnd.random() < 0.2:
            r = mine.post(f"/workspaces/{ws}/conversations/{conv}/fork", ada)
            if r.status_code == 201:
                with lock:
                    convs.append(r.json()["conversation"]["public_id"])
            return r
        rows = {p: v for p, v in listing(mine, ada, base).items() if p.startswith("conversation/")}
        if rows and rnd.random() < 0.7:
            path, seen = rnd.choice(sorted(rows.items()))
            if rnd.random() < 0.6:
                return mine.write(ada, base, path, f"{conv} {path} {seed}.{n}", seen)
            return mine.delete(ada, base, path, seen)
        return mine.write(ada, base, f"conversation/new-{seed}-{n}.md", f"new {seed}.{n}")

    def sweeper() -> None:
        while not stop.is_set():
            reports.append(run_sweep(grace=GRACE, settle=SETTLE))

    # When four threads write, delete and fork while sweeps run back to back
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=sweeper))
    for t in threads:
        t.start()
    time.sleep(RUN_SECONDS)
    stop.set()
    for t in threads:
        t.join(30)
    assert not failures, failures[:3]
    # And one more sweep runs once everything is quiet and old
    time.sleep(GRACE + 1.1)
    reports.append(run_sweep(grace=GRACE, settle=SETTLE))

    # Then the sweeps really removed something (the versions replaced and deleted early on)...
    assert sum(r.deleted for r in reports) > 0, [r.as_json() for r in reports]
    assert len(convs) > len(roots)
    # ...and every document any conversation lists still reads its content from S3
    CACHE.clear()
    checked = 0
    for conv in convs:
        base = conv_base(ws, conv)
        r = api.ls(ada, base)
        assert r.status_code == 200, r.text
        for row in r.json()["memory"]:
            shown = api.show(ada, base, row["path"])
            assert shown.status_code == 200, (conv, row, shown.text)
            assert len(shown.json()["memory"]["content"].encode()) == row["bytesize"]
            checked += 1
    assert checked > 0
    # And in storage terms: every content key any row holds is an object in the bucket
    ddb, _ = aws_clients()
    assert referenced_keys(ddb, settings().table_name) <= set(bucket())


# ---- how it is run -----------------------------------------------------------------------------------


def test_the_sweep_command_prints_a_json_summary(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    # Given one deleted document
    ada, ws, conv = api.room()
    doc = api.write(ada, conv_base(ws, conv), "conversation/gone.md", "gone soon")
    assert api.delete(ada, conv_base(ws, conv), "conversation/gone.md", pair(doc)).status_code == 204

    # When `agent-memory sweep` runs against the local storage with no grace period
    assert cli.main(["sweep", "--grace-seconds", "0", "--settle-seconds", "0", "--force"]) == 0

    # Then it prints one JSON summary, and the bytes are gone
    summary = json.loads(capsys.readouterr().out)
    assert summary["deleted"] == 1 and summary["listed"] == 1 and summary["dry_run"] is False
    assert summary["grace_seconds"] == 0
    assert stored_texts() == []


def test_the_sweep_command_prints_each_step_and_counts_down_its_settle_wait(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one deleted document, and a tick short enough for a one-second wait to show it
    ada, ws, conv = api.room()
    doc = api.write(ada, conv_base(ws, conv), "conversation/gone.md", "gone soon")
    assert api.delete(ada, conv_base(ws, conv), "conversation/gone.md", pair(doc)).status_code == 204
    monkeypatch.setattr(cli, "TICK_SECONDS", 0.2)

    # When a sweep runs with a settle wait
    assert cli.main(["sweep", "--grace-seconds", "0", "--settle-seconds", "1", "--force"]) == 0

    # Then stderr says each step as it happens, the wait and how long is left of it; stdout stays one JSON
    out = capsys.readouterr()
    steps = out.err.strip().splitlines()
    assert all(line.startswith("agent-memory sweep: ") for line in steps)
    assert "listed 1 content objects" in steps[0] and "scanned the table" in steps[1]
    assert any("waiting 1 s for forks" in line for line in steps)
    assert any(line.endswith("s left to wait") for line in steps)
    assert steps[-1].endswith("deleting 1 unreferenced content objects")
    assert json.loads(out.out)["deleted"] == 1


@pytest.mark.parametrize("grace", ["0", "59.5"])
def test_the_sweep_command_refuses_a_grace_below_the_commit_window_unless_forced(
    api: Api, capsys: pytest.CaptureFixture[str], grace: str
) -> None:
    # Given one deleted document, whose orphan a sweep with no grace would remove
    ada, ws, conv = api.room()
    doc = api.write(ada, conv_base(ws, conv), "conversation/gone.md", "gone soon")
    assert api.delete(ada, conv_base(ws, conv), "conversation/gone.md", pair(doc)).status_code == 204

    # When a sweep is asked for with a grace below the floor and no --force
    rc = cli.main(["sweep", "--grace-seconds", grace, "--settle-seconds", "0"])

    # Then it exits 2 with one sentence naming the grace and the floor, and deletes nothing
    out = capsys.readouterr()
    assert rc == 2 and out.out == ""
    (line,) = out.err.strip().splitlines()
    assert f"a grace of {float(grace):g} seconds" in line and "floor of 60 seconds" in line and "--force" in line
    assert stored_texts() == ["gone soon"]
    # And at the floor it runs (keeping the fresh orphan: its history record is too young to let go of it),
    # as it does below it with --force
    assert cli.main(["sweep", "--grace-seconds", "60", "--settle-seconds", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["versions_young"] == 1
    assert stored_texts() == ["gone soon"]
    assert cli.main(["sweep", "--grace-seconds", "0", "--settle-seconds", "0", "--force"]) == 0
    assert stored_texts() == []


def test_the_readme_sweep_example_is_safe() -> None:
    # The README's sweep command, as a reader would copy it, must not delete a write in flight
    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.split("`") if line.lstrip().startswith("AWS_ENDPOINT_URL=") and "sweep" in line]
    assert commands, "the README shows no sweep command"
    for command in commands:
        words = command.split()
        grace = float(words[words.index("--grace-seconds") + 1]) if "--grace-seconds" in words else 900.0
        assert grace >= 60 or "--force" in words, command


def test_the_scheduled_function_sweeps_with_the_deployments_settings(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given one deleted document, and the function's settings from its environment
    ada, ws, conv = api.room()
    doc = api.write(ada, conv_base(ws, conv), "conversation/gone.md", "gone soon")
    assert api.delete(ada, conv_base(ws, conv), "conversation/gone.md", pair(doc)).status_code == 204
    monkeypatch.setenv("SWEEP_GRACE_SECONDS", "3600")
    monkeypatch.setenv("SWEEP_SETTLE_SECONDS", "0")

    # When the scheduled event arrives with an hour's grace, the fresh orphan (and its record) is kept
    event = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    assert handler(event, None)["versions_young"] == 1
    assert stored_texts() == ["gone soon"]
    # And with none, it goes
    monkeypatch.setenv("SWEEP_GRACE_SECONDS", "0")
    assert handler(event, None)["deleted"] == 1
    assert stored_texts() == []


def test_the_template_schedules_the_sweeper_with_least_privilege() -> None:
    # Given the generated template
    template = load_template(ROOT / "template.yaml")
    fn = template["Resources"]["SweeperFunction"]["Properties"]

    # Then the sweeper runs on an EventBridge schedule, from its own code, and serves no HTTP route
    events = fn["Events"].values()
    assert [e["Type"] for e in events] == ["Schedule"]
    assert (ROOT / fn["CodeUri"] / "app.py").is_file()
    # And it may only scan and query the table, delete history records no document keeps, list the bucket
    # and delete content objects
    actions = sorted(
        a
        for st in fn["Policies"][0]["Statement"]
        for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
    )
    assert actions == ["dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:Scan", "s3:DeleteObject", "s3:ListBucket"]
    # And the fork log it reads expires on its own
    table = template["Resources"]["MemoryTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_the_sweep_command_says_plainly_when_it_cannot_reach_storage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an endpoint on loopback where nothing listens
    import socket

    from agent_memory.edges.services import reset_services
    from agent_memory.store import reset_store
    from agent_memory_sdk.local.cli import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    reset_store()
    try:
        # When a sweep is asked for
        rc = main(["sweep", "--grace-seconds", "0", "--settle-seconds", "0", "--force"])
    finally:
        monkeypatch.undo()
        reset_store()
        # The gateway's services hold the store they were built with: rebuild them on the same new clients,
        # or later tests' hooks on `aws_clients()` would watch clients no handler uses.
        reset_services()
    # Then it exits 2 with one line naming what to set, and no traceback
    err = capsys.readouterr().err
    assert rc == 2
    assert "cannot reach the storage" in err and "AWS_ENDPOINT_URL" in err
    assert "Traceback" not in err
