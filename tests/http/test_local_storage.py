"""The local storage's data folder: what a restart brings back, and how damage on disk is met.

Each test runs the embedded storage on a folder of its own, changes it through boto3 as the service
does, stops it and starts it again on the same folder (in this process: the real SIGKILL of a real
server is tests/http/test_crash_recovery.py). State is compared item by item and object by object.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from agent_memory_sdk.local.durable import DataDir, DataDirError
from agent_memory_sdk.local.moto_backend import EmbeddedMoto, create_resources
from agent_memory_sdk.local.runtime import LocalService
from agent_memory_sdk.local.template import load_template
from botocore.config import Config
from botocore.exceptions import ClientError

ROOT = Path(__file__).resolve().parents[2]
TABLE, BUCKET = "agent-memory-durable", "agent-memory-durable-content"


class Storage:
    """One embedded storage on a folder, with the clients the service would use."""

    def __init__(self, folder: Path, repair: bool = False) -> None:
        self.moto = EmbeddedMoto(data_dir=folder, repair=repair).start()
        # No retries: a refusal must reach the test as the storage answered it.
        config = Config(retries={"max_attempts": 1, "mode": "standard"})
        self.ddb = boto3.client("dynamodb", endpoint_url=self.moto.url, config=config)
        self.s3 = boto3.client("s3", endpoint_url=self.moto.url, config=config)
        create_resources(self.ddb, self.s3, load_template(ROOT / "template.yaml"), TABLE, BUCKET)

    @property
    def data(self) -> DataDir:
        assert self.moto.data is not None
        return self.moto.data

    def state(self) -> tuple[list[dict[str, Any]], dict[str, tuple[bytes, str, str, float]]]:
        """Every item, and every object with its content type, ETag and LastModified."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": TABLE}
        while True:
            page = self.ddb.scan(**kwargs)
            items.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        objects = {}
        for listed in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
            for obj in listed.get("Contents", []):
                got = self.s3.get_object(Bucket=BUCKET, Key=obj["Key"])
                objects[obj["Key"]] = (
                    got["Body"].read(),
                    got["ContentType"],
                    got["ETag"],
                    obj["LastModified"].timestamp(),
                )
        return sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"])), objects

    def stop(self) -> None:
        self.moto.stop()


@pytest.fixture
def folder(tmp_path: Path, service: LocalService) -> Iterator[Path]:
    # The storage shares moto's process-wide state with the suite's service: empty it again afterwards.
    yield tmp_path / "data"
    service.reset()


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _changes(s: Storage, tag: str, n: int = 5) -> None:
    """Every kind of change the service makes: puts, conditional updates, transactions, deletes, objects."""
    for i in range(n):
        s.ddb.put_item(TableName=TABLE, Item={**_key(f"{tag}#{i}", "meta"), "v": {"N": "0"}, "text": {"S": "é" * i}})
        s.ddb.update_item(
            TableName=TABLE,
            Key=_key(f"{tag}#{i}", "meta"),
            UpdateExpression="SET v = v + :one",
            ConditionExpression="v = :zero",
            ExpressionAttributeValues={":one": {"N": "1"}, ":zero": {"N": "0"}},
        )
        s.ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {**_key(f"{tag}#{i}", "v1"), "c": {"S": "x"}}}},
                {"Delete": {"TableName": TABLE, "Key": _key(f"{tag}#{i}", "gone")}},
            ]
        )
        s.s3.put_object(Bucket=BUCKET, Key=f"{tag}/{i}", Body=f"content {i}".encode(), ContentType="text/markdown")
    s.ddb.delete_item(TableName=TABLE, Key=_key(f"{tag}#0", "v1"))
    s.s3.delete_object(Bucket=BUCKET, Key=f"{tag}/0")
    # A refused change is not journaled, and changes nothing after a restart either.
    with pytest.raises(ClientError):
        s.ddb.put_item(
            TableName=TABLE, Item={**_key(f"{tag}#0", "meta")}, ConditionExpression="attribute_not_exists(pk)"
        )


def _journal(folder: Path) -> Path:
    (path,) = folder.glob("journal-*.log")
    return path


def test_a_restart_brings_back_every_change(folder: Path) -> None:
    s = Storage(folder)
    _changes(s, "a")
    before = s.state()
    s.stop()
    again = Storage(folder)
    assert again.state() == before
    # The restarted storage keeps journaling: a change after the restart survives the next one.
    _changes(again, "b", 2)
    later = again.state()
    again.stop()
    assert Storage(folder).state() == later


def test_compaction_writes_a_snapshot_and_starts_a_new_journal(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEMORY_JOURNAL_COMPACT_BYTES", "4096")
    s = Storage(folder)
    _changes(s, "a", 12)
    before = s.state()
    assert s.data.generation >= 2
    # Only the newest generation stays: the older snapshots and journals were replaced, not kept.
    assert [p.name for p in folder.glob("state-*.snap")] == [f"state-{s.data.generation}.snap"]
    assert [p.name for p in folder.glob("journal-*.log")] == [f"journal-{s.data.generation}.log"]
    generation = s.data.generation
    s.stop()
    # What a kill between a compaction's rename and its clean-up leaves: the generation before, whole.
    older = generation - 1
    (folder / f"state-{older}.snap").write_bytes((folder / f"state-{generation}.snap").read_bytes())
    (folder / f"journal-{older}.log").write_bytes(b"AGMEMLOG\x00\x00\x00\x01")
    monkeypatch.delenv("AGENT_MEMORY_JOURNAL_COMPACT_BYTES")
    again = Storage(folder)
    assert again.state() == before
    assert sorted(p.name for p in folder.glob("*-*.*") if "dropped" not in p.name) == [
        f"journal-{generation}.log",
        f"state-{generation}.snap",
    ]
    again.stop()


def test_a_record_cut_short_at_the_end_is_dropped_with_one_log_line(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = Storage(folder)
    _changes(s, "a", 2)
    before = s.state()
    s.stop()
    journal = _journal(folder)
    whole = journal.read_bytes()
    # What a power cut leaves: a frame that promises more bytes than reached the disk.
    journal.write_bytes(whole + struct.pack(">II", 900, 0) + b"R{partial")
    with caplog.at_level(logging.WARNING, logger="agent_memory_sdk.local"):
        again = Storage(folder)
    lines = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert len(lines) == 1 and "(17 bytes)" in lines[0] and str(journal) in lines[0]
    assert again.state() == before
    assert journal.read_bytes()[: len(whole)] == whole
    _changes(again, "b", 1)
    after = again.state()
    again.stop()
    assert Storage(folder).state() == after


def test_damage_refuses_to_start_and_repair_keeps_what_came_before(folder: Path) -> None:
    s = Storage(folder)
    _changes(s, "a", 2)
    kept = s.state()
    s.stop()
    journal = _journal(folder)
    good = journal.stat().st_size
    s = Storage(folder)
    _changes(s, "b", 2)
    s.stop()
    data = bytearray(journal.read_bytes())
    data[good + 20] ^= 0xFF  # one flipped byte inside the first record written after `kept`
    journal.write_bytes(bytes(data))
    with pytest.raises(DataDirError) as refused:
        Storage(folder)
    message = str(refused.value)
    assert str(journal) in message and "--repair" in message and "checksum" in message
    repaired = Storage(folder, repair=True)
    assert repaired.moto.report is not None
    (dropped,) = repaired.moto.report.dropped
    assert f"{len(data) - good} bytes of {journal.name} from byte {good}" in dropped
    (aside,) = folder.glob(f"{journal.name}.dropped-*")
    assert aside.read_bytes() == bytes(data[good:])
    assert repaired.state() == kept
    repaired.stop()
    # Repaired for good: the next start needs no flag.
    assert Storage(folder).state() == kept


def test_a_folder_from_a_newer_format_is_refused(folder: Path) -> None:
    Storage(folder).stop()
    (folder / "format.json").write_text(json.dumps({"format": 2}))
    with pytest.raises(DataDirError, match=r"holds data format 2, and this agent-memory reads format 1"):
        Storage(folder)
    (folder / "format.json").write_text(json.dumps({"format": 1}))
    journal = _journal(folder)
    raw = journal.read_bytes()
    journal.write_bytes(raw[:8] + struct.pack(">I", 7) + raw[12:])
    with pytest.raises(DataDirError, match=rf"{journal} was written in data format 7"):
        Storage(folder)


def test_a_second_server_on_the_same_folder_is_refused(folder: Path) -> None:
    s = Storage(folder)
    try:
        with pytest.raises(
            DataDirError, match=rf"{folder} is in use by another agent-memory server \(pid {os.getpid()}\)"
        ):
            EmbeddedMoto(data_dir=folder)
    finally:
        s.stop()
    Storage(folder).stop()  # released with the first server


def test_a_journal_that_cannot_be_written_refuses_the_change_and_every_later_one(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Storage(folder)
    _changes(s, "a", 1)
    kept = s.state()

    def full(self: DataDir, record: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(DataDir, "append", full)
    with pytest.raises(ClientError) as caught:
        s.ddb.put_item(TableName=TABLE, Item=_key("late", "x"))
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert "No space left on device" in caught.value.response["Error"]["Message"]
    monkeypatch.undo()
    with pytest.raises(ClientError) as again:
        s.s3.put_object(Bucket=BUCKET, Key="later", Body=b"x")
    assert again.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    s.stop()
    assert Storage(folder).state() == kept


def test_the_operator_key_is_kept_with_the_data(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MEMORY_OPERATOR_KEY", raising=False)
    s = Storage(folder)
    key = s.data.operator_key()
    s.stop()
    assert (folder / "operator-key").stat().st_mode & 0o777 == 0o600
    again = Storage(folder)
    assert again.data.operator_key() == key
    monkeypatch.setenv("AGENT_MEMORY_OPERATOR_KEY", "chosen")
    assert again.data.operator_key() == "chosen"
    again.stop()


def test_the_server_sweeps_on_its_own_schedule(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AGENT_MEMORY_"))}
    env["AGENT_MEMORY_SWEEP_INTERVAL_SECONDS"] = "1"
    server = subprocess.Popen(
        [sys.executable, "-m", "agent_memory_sdk.local.cli", "serve", "--port", "0", "--data-dir", str(tmp_path / "d")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stderr is not None
        assert json.loads(server.stdout.readline())["data_dir"] == str(tmp_path / "d")
        deadline = time.monotonic() + 60
        swept = None
        while swept is None and time.monotonic() < deadline:
            line = server.stderr.readline()
            if line.startswith("agent-memory serve: swept: "):
                swept = json.loads(line.split("swept: ", 1)[1])
        assert swept is not None, "no sweep within a minute"
        # The deployed schedule's grace: nothing younger than 15 minutes is judged.
        assert swept["grace_seconds"] == 900 and swept["dry_run"] is False
    finally:
        server.kill()
        server.wait()
