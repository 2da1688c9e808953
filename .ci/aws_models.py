"""Write the trimmed AWS service models the store's clients load (shared/agent_memory/store/aws_models/).

Creating a boto3 client parses its whole service model (S3's is 1.5 MB of JSON, DynamoDB's half a MB) and
botocore's endpoints.json (1.2 MB), about half of what the two clients cost a cold start. The store calls a
few operations of each: this writes, from the installed botocore, each service model cut to the operations
the code base names (a client method, a paginator, a waiter's operation) and the shapes they reach, without
documentation, and endpoints.json cut to the two services. The store's loader searches that folder first
and botocore's own data for everything else (endpoint rule sets, paginators, waiters, retry rules).

Run: `python .ci/aws_models.py` (after upgrading botocore or calling a new operation); `--check` fails when
the folder differs from what this would write (tests/unit/test_aws_models.py runs it).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "shared" / "agent_memory" / "store" / "aws_models"
SERVICES = ("dynamodb", "s3")
# Where an operation may be named: the layer, the local runtime that creates the tables, the tests and tools.
SOURCES = ("shared", "tests", ".ci")


def _source_text() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for top in SOURCES
        for p in sorted((ROOT / top).rglob("*.py"))
        if "node_modules" not in p.parts
    )


def _operations(service: str, model: dict[str, Any], text: str) -> list[str]:
    from botocore import xform_name
    from botocore.loaders import create_loader

    # Any word: a method called, passed (`partial(ddb.batch_get_item, ...)`) or a counted "dynamodb:GetItem".
    named = set(re.findall(r"[A-Za-z0-9_]+", text))
    ops = {op for op in model["operations"] if xform_name(op) in named or op in named}
    waiters = create_loader().load_service_model(service, "waiters-2")["waiters"]
    ops |= {w["operation"] for name, w in waiters.items() if xform_name(name) in named}
    return sorted(ops)


def _reached(model: dict[str, Any], ops: list[str]) -> set[str]:
    shapes = model["shapes"]
    todo = [
        ref["shape"]
        for op in ops
        for ref in (model["operations"][op].get("input"), model["operations"][op].get("output"))
        if ref
    ]
    todo += [e["shape"] for op in ops for e in model["operations"][op].get("errors", [])]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        shape = shapes[name]
        todo += [m["shape"] for m in shape.get("members", {}).values()]
        todo += [shape[k]["shape"] for k in ("member", "key", "value") if k in shape]
    return seen


def _undocumented(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _undocumented(v) for k, v in node.items() if k not in ("documentation", "documentationUrl")}
    if isinstance(node, list):
        return [_undocumented(v) for v in node]
    return node


def trimmed() -> dict[str, str]:
    """Relative path -> file text, for every file the folder should hold."""
    from botocore.loaders import create_loader

    loader = create_loader()
    text = _source_text()
    files: dict[str, str] = {}
    for service in SERVICES:
        version = loader.determine_latest_version(service, "service-2")
        model = loader.load_service_model(service, "service-2", version)
        ops = _operations(service, model, text)
        kept = _reached(model, ops)
        cut = {
            "version": model.get("version", "2.0"),
            "metadata": model["metadata"],
            "operations": {op: model["operations"][op] for op in ops},
            "shapes": {name: model["shapes"][name] for name in sorted(kept)},
        }
        files[f"{service}/{version}/service-2.json"] = _dumps(_undocumented(cut))
    endpoints = loader.load_data("endpoints")
    for partition in endpoints["partitions"]:
        partition["services"] = {k: v for k, v in partition["services"].items() if k in SERVICES}
    files["endpoints.json"] = _dumps(endpoints)
    return files


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    files = trimmed()
    on_disk = {str(p.relative_to(OUT)): p.read_text() for p in OUT.rglob("*.json")} if OUT.exists() else {}
    if "--check" in argv:
        if on_disk != files:
            print(f"{OUT.relative_to(ROOT)} is stale: run python .ci/aws_models.py", file=sys.stderr)
            return 1
        return 0
    for stale in set(on_disk) - set(files):
        (OUT / stale).unlink()
    for rel, body in files.items():
        (OUT / rel).parent.mkdir(parents=True, exist_ok=True)
        (OUT / rel).write_text(body)
    print("\n".join(f"{rel}: {len(body):,} bytes" for rel, body in sorted(files.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
