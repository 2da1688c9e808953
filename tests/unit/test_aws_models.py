"""The store's clients load the trimmed service models (.ci/aws_models.py), and those are current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_memory.store.clients import AWS_MODELS, ddb_client, s3_client

ROOT = Path(__file__).resolve().parents[2]


def test_the_trimmed_models_are_what_the_generator_writes_from_this_botocore() -> None:
    # When the generator checks the folder against the operations the code base names today
    done = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "aws_models.py"), "--check"], capture_output=True, text=True, check=False
    )
    # Then nothing is missing or stale (a newly called operation needs `python .ci/aws_models.py`)
    assert done.returncode == 0, done.stderr


def test_the_clients_answer_the_store_operations_from_the_trimmed_models() -> None:
    # Given the store's clients
    ddb, s3 = ddb_client(), s3_client()
    # Then their models are the trimmed ones: the operations the store calls, and not the hundred others
    assert {"GetItem", "Query", "TransactWriteItems", "BatchGetItem"} <= set(ddb.meta.service_model.operation_names)
    assert len(ddb.meta.service_model.operation_names) < 30  # of botocore's 62
    assert {"GetObject", "PutObject", "DeleteObject", "ListObjectsV2"} <= set(s3.meta.service_model.operation_names)
    assert len(s3.meta.service_model.operation_names) < 30  # of botocore's 119
    assert (AWS_MODELS / "endpoints.json").exists()
