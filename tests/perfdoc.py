"""docs/performance.md: the published figures, rendered from what `make bench` measured.

`make bench` writes its measurements to docs/performance.json and renders docs/performance.md from them
with this module. The models (latency in AWS, dollars per million calls) are pure functions of those
measurements and of the published figures below, so `python -m tests.perfdoc --check` (CI, beside the
template check) can re-render the page and fail when it drifted: an edited page, a changed model or price,
a verb the bench runs that the page does not list, or a function whose configured memory changed.

Published figures are stated with their sources; where AWS publishes a bound rather than a percentile,
the model's choice inside that bound is stated too.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "performance.json"
PAGE = ROOT / "docs" / "performance.md"
CHART = ROOT / "docs" / "soak-rss.svg"
# The bench's charts (tests/charts.py), drawn from DATA alone and checked byte for byte like the page.
CHART_DIR = ROOT / "docs" / "perf"
LATENCY_CHART, COST_CHART, LOAD_CHART, COLD_CHART = "latency.svg", "cost.svg", "load.svg", "coldstart.svg"

# ---- published latency figures (in-Region, per request) -----------------------------------------------


@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p95_ms: float
    basis: str

    def draw(self, rng: random.Random) -> float:
        """One request's latency from the lognormal with this median and 95th percentile."""
        sigma = (math.log(self.p95_ms) - math.log(self.p50_ms)) / 1.6449
        return math.exp(rng.gauss(math.log(self.p50_ms), sigma))


_DDB_SOURCE = "https://aws.amazon.com/dynamodb/ (\u201csingle-digit millisecond performance at any scale\u201d)"
_S3_SOURCES = (
    "https://docs.aws.amazon.com/whitepapers/latest/s3-optimizing-performance-best-practices/"
    "timeouts-and-retries-for-latency-sensitive-applications.html (small requests: median latency in the tens "
    "of milliseconds); https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance-design-"
    "patterns.html (roughly 100\u2013200 ms small-object and first-byte latency, the reason it gives for caching)"
)
_DDB_ITEM = Latency(5.0, 10.0, "median 5 ms, p95 at the published single-digit bound")
LATENCY: dict[str, Latency] = {
    "GetItem": _DDB_ITEM,
    "BatchGetItem": _DDB_ITEM,
    "Query": _DDB_ITEM,
    "PutItem": _DDB_ITEM,
    "UpdateItem": _DDB_ITEM,
    "DeleteItem": _DDB_ITEM,
    "BatchWriteItem": _DDB_ITEM,
    "TransactWriteItems": Latency(10.0, 20.0, "two item writes (prepare, commit): twice a single write"),
    "TransactGetItems": Latency(10.0, 20.0, "two item reads: twice a single read"),
    "GetObject": Latency(30.0, 150.0, "median in the tens of ms; p95 in the 100-200 ms band"),
    "PutObject": Latency(30.0, 150.0, "as GetObject"),
    "DeleteObject": Latency(30.0, 150.0, "as GetObject"),
    "HeadObject": Latency(30.0, 150.0, "as GetObject"),
}
LAMBDA_FULL_VCPU_MB = 1769
LAMBDA_CPU_SOURCE = (
    "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html (CPU in proportion to memory; "
    "1,769 MB is one full vCPU)"
)
MODEL_DRAWS = 4000

# ---- published prices (us-east-1, on-demand, first tier; read 2026-12) ----------------------------------

APIGW_PER_MILLION = 1.00  # HTTP API, first 300 million requests a month
LAMBDA_REQUEST_PER_MILLION = 0.20
LAMBDA_GB_SECOND_ARM = 0.0000133334  # arm64, the template's architecture
DDB_WRU_PER_MILLION = 0.625
DDB_RRU_PER_MILLION = 0.125
S3_PUT_PER_THOUSAND = 0.005  # PUT, COPY, POST, LIST
S3_GET_PER_THOUSAND = 0.0004  # GET, SELECT; DELETE is free
AGENTCORE_EVENT_PER_THOUSAND = 0.25  # short-term memory: a new event
AGENTCORE_RETRIEVAL_PER_THOUSAND = 0.50  # long-term memory: a retrieval
AGENTCORE_RECORD_MONTH_PER_THOUSAND = 0.75  # long-term records stored a month (built-in strategies)
PRICE_SOURCES = {
    "API Gateway HTTP API": ("$1.00 per million requests", "https://aws.amazon.com/api-gateway/pricing/"),
    "Lambda requests": ("$0.20 per million", "https://aws.amazon.com/lambda/pricing/"),
    "Lambda duration (arm64)": (
        "$0.0000133334 per GB-second, billed per 1 ms",
        "https://aws.amazon.com/lambda/pricing/",
    ),
    "DynamoDB on-demand writes": (
        "$0.625 per million write request units",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "DynamoDB on-demand reads": (
        "$0.125 per million read request units",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "S3 Standard PUT/COPY/POST/LIST": ("$0.005 per 1,000 requests", "https://aws.amazon.com/s3/pricing/"),
    "S3 Standard GET/SELECT": ("$0.0004 per 1,000 requests (DELETE free)", "https://aws.amazon.com/s3/pricing/"),
    "AgentCore Memory short-term events": (
        "$0.25 per 1,000 new events",
        "https://aws.amazon.com/bedrock/agentcore/pricing/",
    ),
    "AgentCore Memory long-term retrieval": (
        "$0.50 per 1,000 memory retrievals",
        "https://aws.amazon.com/bedrock/agentcore/pricing/",
    ),
    "AgentCore Memory long-term storage": (
        "$0.75 per 1,000 memory records a month (built-in strategies)",
        "https://aws.amazon.com/bedrock/agentcore/pricing/",
    ),
}

# The same work in AgentCore Memory: a write is a new event; a search-like read (grep, the block, a
# record search) is a long-term retrieval; reads of named items (GetEvent, ListEvents, GetMemoryRecord)
# and deletes carry no per-request price there; forks, history and promotion have no counterpart.
_EVENT = ("CreateEvent", AGENTCORE_EVENT_PER_THOUSAND * 1000)
_RETRIEVE = ("RetrieveMemoryRecords", AGENTCORE_RETRIEVAL_PER_THOUSAND * 1000)
_READ = ("GetEvent / ListEvents", 0.0)  # DeleteEvent likewise carries no per-request price


def agentcore_counterpart(verb: str) -> tuple[str, float] | None:
    name = verb.removesuffix(" (cold)")
    if name.startswith(("write", "edit", "record append", "memory file write")):
        return _EVENT
    if name == "delete":
        return ("DeleteEvent", 0.0)
    if name.startswith(("grep", "memory_block", "record search")):
        return _RETRIEVE
    if name in ("show", "list", "record show", "memory file show", "show_conversation", "workspace show"):
        return _READ
    return None


# ---- the models ---------------------------------------------------------------------------------------


def cpu_scale(memory_mb: int) -> float:
    """How much longer a CPU-bound millisecond takes at this memory than on one full core."""
    return max(1.0, LAMBDA_FULL_VCPU_MB / memory_mb)


def predicted_ms(row: dict[str, Any]) -> tuple[float, float]:
    """(p50, p95) of the verb's time inside Lambda in AWS: its measured CPU at the function's share of a core,
    plus its request graph drawn from the published latencies (parallel calls wait for the slowest, rounds
    add up). Seeded by the verb's name, so the page renders the same every time."""
    rng = random.Random(zlib.crc32(row["label"].encode()))
    scale = cpu_scale(row["memory_mb"])
    totals = []
    for _ in range(MODEL_DRAWS):
        waits = 0.0
        for step in row["graph"]:
            # `width` lanes share the step's calls; each lane sends its share one after another.
            lanes = [0.0] * step["width"]
            k = 0
            for op, count in step["ops"].items():
                for _ in range(count):
                    lanes[k % step["width"]] += LATENCY[op].draw(rng)
                    k += 1
            waits += max(lanes, default=0.0)
        totals.append(waits)
    totals.sort()
    wait50 = totals[len(totals) // 2]
    wait95 = totals[math.ceil(0.95 * len(totals)) - 1]
    cpu50 = (row["own_cpu_p50"] + row["sdk_cpu_p50"]) * scale
    cpu95 = (row["own_cpu_p95"] + row["sdk_cpu_p95"]) * scale
    return cpu50 + wait50, cpu95 + wait95


@dataclass(frozen=True)
class Cost:
    apigw: float
    lambda_requests: float
    lambda_duration: float
    dynamodb: float
    s3: float

    @property
    def total(self) -> float:
        return self.apigw + self.lambda_requests + self.lambda_duration + self.dynamodb + self.s3


def cost_per_million(row: dict[str, Any]) -> Cost:
    """Dollars per million calls of the verb: the gateway, Lambda at its memory for the predicted median
    duration (billed per ms), and the counted DynamoDB units and S3 requests."""
    billed_ms = math.ceil(predicted_ms(row)[0])
    gb_seconds = row["memory_mb"] / 1024 * billed_ms / 1000
    return Cost(
        APIGW_PER_MILLION,
        LAMBDA_REQUEST_PER_MILLION,
        gb_seconds * LAMBDA_GB_SECOND_ARM * 1e6,
        row["rru"] * DDB_RRU_PER_MILLION + row["wru"] * DDB_WRU_PER_MILLION,
        row["s3_put"] * S3_PUT_PER_THOUSAND * 1000 + row["s3_get"] * S3_GET_PER_THOUSAND * 1000,
    )


# ---- rendering ----------------------------------------------------------------------------------------


def _table(head: list[str], rows: Iterable[list[str]], align: str = "") -> list[str]:
    align = align or "l" + "r" * (len(head) - 1)
    marks = [":--" if a == "l" else "--:" for a in align]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join(marks) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _f(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def depth(graph: list[dict[str, Any]]) -> int:
    """Requests that run one after another: a step of n calls, w at a time, is ceil(n / w) of them."""
    return sum(math.ceil(sum(step["ops"].values()) / step["width"]) for step in graph)


def _graph(graph: list[dict[str, Any]]) -> str:
    parts = []
    for step in graph:
        n = sum(step["ops"].values())
        text = " + ".join(op if k == 1 else f"{op} x{k}" for op, k in step["ops"].items())
        parts.append(f"{text} ({step['width']} at a time)" if step["width"] < n else text)
    return " \u2192 ".join(parts) or "none"


def render(data: dict[str, Any]) -> str:
    run = data["run"]
    rows = data["verbs"]
    out = [
        "# Performance",
        "",
        "Generated by `make bench` (`tests/bench.py`, rendered by `tests/perfdoc.py`) from the measurements in",
        "`docs/performance.json`; CI re-renders it and fails on drift. Do not edit by hand.",
        "",
        f"Run: {run['mode']} on {run['machine']} ({run['date']}). Handlers are the functions' real Lambda handlers",
        "called with HTTP API v2 events against the local service's serialised moto in another process; every",
        "botocore call is counted and timed. Times from this machine are ratios' raw material, not AWS latencies:",
        "the AWS figures below are a model built from the counted request graph and AWS's published numbers.",
        "",
        "## AWS requests per verb",
        "",
        "Requests are counted per call with botocore's event hooks (mean over the measured calls). Depth is the",
        "number of requests that run one after another (parallel calls overlap in time and count once); the",
        "graph shows each step, `x8` for parallel calls. Cold rows start with an empty content cache.",
        "",
    ]
    out += _table(
        ["verb", "DynamoDB", "S3", "by operation", "depth", "request graph", "target met"],
        (
            [
                r["label"],
                f"{r['ddb']:g}",
                f"{r['s3']:g}",
                r["ops_text"],
                str(depth(r["graph"])),
                _graph(r["graph"]),
                "yes" if r["target_met"] else "NO",
            ]
            for r in rows
        ),
        "lrrlrll",
    )
    out += [
        "",
        "## Handler CPU per verb",
        "",
        "Milliseconds of CPU per call on this machine, excluding AWS: *own* is the handler's own work (the process's",
        "CPU minus botocore's); *sdk* is botocore's work inside the calls (build, sign, send, parse), which Lambda",
        "pays too. moto's server closes every connection, so *sdk* here also pays a TCP connect per request that a",
        "warm Lambda's keep-alive pool would not. *local total* is the wall time against local moto.",
        "",
    ]
    out += _table(
        ["verb", "n", "own p50", "own p99", "sdk p50", "sdk p99", "sdk/own", "local total p50"],
        (
            [
                r["label"],
                str(r["n"]),
                _f(r["own_cpu_p50"], 3),
                _f(r["own_cpu_p99"], 3),
                _f(r["sdk_cpu_p50"], 3),
                _f(r["sdk_cpu_p99"], 3),
                _f(r["sdk_cpu_p50"] / r["own_cpu_p50"], 1) if r["own_cpu_p50"] > 0 else "-",
                _f(r["total_p50"]),
            ]
            for r in rows
        ),
    )
    out += _cold(data)
    out += _worst(data)
    out += _load(data.get("load"))
    out += _local(data.get("scale"), data.get("soak"), data.get("run", {}))
    out += _latency(rows)
    out += _costs(rows)
    return "\n".join(out) + "\n"


def _cold(data: dict[str, Any]) -> list[str]:
    cold = data.get("cold_start")
    out = ["", "## Cold start", ""]
    if cold:
        routes = [(r["process_ms"] / cold["boto3_ms"], r["function"]) for r in cold["rows"]]
        worst = max(routes)
        missed = [
            r["function"]
            for r in cold["rows"]
            if r["process_ms"] / cold["boto3_ms"] > cold["target"] or not r.get("succeeded", True)
        ]
        few = cold["which"] == "all" and any(r["runs"] < cold["runs"] for r in cold["rows"])
        out += [
            "Process start to the first answer, per function: a fresh `python` in the function's folder (the layer",
            "on the path, its bytecode compiled as `shared/Makefile` ships it, the template's environment) imports",
            "`app` and answers one successful call (tests/coldcases.py: each run a call of its own, made in a small",
            "world before the process starts) against the local storage; timed from the process's start to its",
            "answer (a container answers and stays: its interpreter's exit is no part of a cold start), beside a bare",
            f"`python -c 'import boto3'` to its import's end, interleaved with it in the same run: "
            f"{cold['boto3_ms']:.1f} ms (median).",
            f"Median of {cold['runs']} runs"
            + (
                f" for a representative set (each handler module's first route and the busiest verbs' functions), "
                f"{cold['few_runs']} for the others."
                if few
                else (" per function (one per handler module: --quick)." if cold["which"] == "some" else ".")
            ),
            f"Target: every route at most {cold['target']:g}x. {len(routes)} functions measured: median "
            f"{statistics.median(x for x, _ in routes):.2f}x, worst `{worst[1]}` at {worst[0]:.2f}x; "
            + (f"{len(missed)} over the target." if missed else "all within it."),
            "*status* is the first run's answer: the route's success (the catch-all `unknown_route` answers its",
            "404 envelope). A row any of whose runs answered otherwise is marked and fails the target: a refusal",
            "skips the reads, clients and models a first call pays. The scheduled sweeper is no route and is not",
            "measured. `tests/unit/test_route_imports.py` keeps an init budget in CI.",
            "",
            f"![Cold start per function]({CHART_DIR.name}/{COLD_CHART})",
            "",
        ]
        out += _table(
            ["function", "runs", "process ms", "import ms", "first call ms", "status", "x boto3"],
            (
                [
                    r["function"],
                    str(r["runs"]),
                    _f(r["process_ms"], 1),
                    _f(r["import_ms"], 1),
                    _f(r["first_ms"], 1),
                    str(r["status"]) + ("" if r.get("succeeded", True) else " (not all runs succeeded)"),
                    _f(r["process_ms"] / cold["boto3_ms"]),
                ]
                for r in sorted(cold["rows"], key=lambda r: (-float(r["process_ms"]), r["function"]))
            ),
        )
        out.append("")
    out += _snapstart()
    first = data.get("first_calls") or []
    if first:
        out += [
            "First request in a fresh process per verb (ms), every verb this page lists: *import* is `import app`;",
            "*first* the first call (boto3, the clients it needs, its request model and first connections",
            "included); *second* the next call in the same process; *warm* the local total p50 above. A fresh",
            "process's content cache is empty, so a *(cold)* row's first request is its verb's first call.",
            "",
        ]
        out += _table(
            ["verb", "function", "import", "first", "cold sum", "second", "warm"],
            (
                [
                    f["verb"],
                    f["function"],
                    _f(f["import_ms"], 1),
                    _f(f["first_ms"], 1),
                    _f(f["import_ms"] + f["first_ms"], 1),
                    _f(f["second_ms"], 1) if f.get("second_ms") is not None else "-",
                    _f(f["warm_ms"]) if f.get("warm_ms") is not None else "-",
                ]
                for f in first
            ),
            "llrrrrr",
        )
    return out


def _snapstart_functions() -> tuple[int, int]:
    """(functions with SnapStart, functions) in template.yaml."""
    sys.path.insert(0, str(ROOT / "shared"))
    from agent_memory_sdk.local.template import load_template

    doc = load_template(ROOT / "template.yaml")
    functions = [r for r in doc["Resources"].values() if r.get("Type") == "AWS::Serverless::Function"]
    snap = [r for r in functions if (r.get("Properties") or {}).get("SnapStart")]
    return len(snap), len(functions)


def _snapstart() -> list[str]:
    snap, total = _snapstart_functions()
    return [
        "### What SnapStart changes in AWS",
        "",
        f"{snap} of the {total} functions, the routes an agent calls while it works (its memory, records, store",
        "entries and skills), run with Lambda SnapStart (template.yaml: `SnapStart: ApplyOn: PublishedVersions`;",
        "the HTTP API calls the `live` alias SAM publishes). Lambda runs their init once per published version:",
        "`import app`, then the before-snapshot hook (`shared/agent_memory/edges/snapstart.py`) builds what a first",
        "request would (the route's request models, the resolver and store, both boto3 clients, the logger and",
        "metrics), and snapshots the memory. A new environment restores that snapshot and runs the after-restore",
        "hook (re-seeds `random`, restarts the id sequence, builds new clients on the already parsed service",
        "models: no pool or credentials shared between environments). So in the latency model a cold request of",
        "a SnapStart function is the restore, the hook and the verb's warm prediction below plus one new",
        "connection per service it calls; the *import* and *first* columns above (boto3, clients, models) move",
        "out of the request into the version's publication. AWS publishes no restore figure: it is the REPORT",
        "line's Restore Duration, to be read from CloudWatch after a deploy. An on-demand function's cold request",
        "is still its whole init, these columns stretched by its share of a core (512 MB: 0.29), then its first",
        "call. SnapStart for Python bills each published version's cached snapshot and each restore",
        "(https://aws.amazon.com/lambda/pricing/), not modelled in the cost table below. The other functions",
        "(directory, Memory administration, executions) start on demand: each SnapStart function adds a Version",
        "and an Alias to the stack, two resources against CloudFormation's 500 (docs/decisions.md, issue 27).",
        "",
    ]


def _worst(data: dict[str, Any]) -> list[str]:
    worst = [r for r in data["verbs"] if r["label"].startswith(("grep worst", "memory_block"))]
    if not worst:
        return []
    out = [
        "",
        "## Grep and block worst cases",
        "",
        data.get("worst_note", ""),
        "",
    ]
    out += _table(
        ["verb", "requests", "S3 GETs", "local total p50", "local total max", "own CPU p50", "own CPU p99"],
        (
            [
                r["label"],
                f"{r['ddb'] + r['s3']:g}",
                f"{r['s3_get_range']}",
                _f(r["total_p50"], 1),
                _f(r["total_max"], 1),
                _f(r["own_cpu_p50"], 1),
                _f(r["own_cpu_p99"], 1),
            ]
            for r in worst
        ),
    )
    return out


def _load(load: dict[str, Any] | None) -> list[str]:
    out = ["", "## Load run through the local gateway", ""]
    if not load:
        return [*out, "Not run (`--no-load`)."]
    inv = load["invariants"]
    out += [
        f"{load['clients']} concurrent clients over real HTTP for {load['seconds']:.1f} s (bounded at "
        f"{load['max_requests']} requests), mixing reads, conditional writes on shared documents, forks, blocks and",
        "creates racing the conversation's document cap, all against one local service (one serialised moto: the",
        "throughput is this machine's, not AWS's). Invariants checked after the run:",
        "",
        f"- lost updates: {inv['lost_updates']}; out of order: {inv['out_of_order']}; versions nobody was told of: "
        f"{inv['unexplained_versions']}: each of the {inv['accepted_writes']} accepted writes is in its document's "
        f"history at the version it was answered, with its content ({inv['stale_refusals']} writes were refused "
        "as stale: the contention was real)",
        f"- the cap: {inv['cap_actual']} documents of {inv['cap_expected']}, {inv['cap_refusals']} creates past it "
        f"refused; refusals with another code: {inv['cap_refusals_wrong_code']}; refused before the cap was "
        f"reached: {inv['cap_premature_refusals']}",
        f"- 5xx answers: {inv['five_xx']}; unexpected 4xx: {inv['unexpected_4xx']}",
        "",
        f"{load['requests']} requests, {load['throughput_rps']:.1f} per second; latency over all: p50 "
        f"{load['p50_ms']:.1f} ms, p95 {load['p95_ms']:.1f} ms, p99 {load['p99_ms']:.1f} ms.",
        "",
    ]
    sweep = load.get("sweep") or []
    if sweep:
        out += [
            "The same mix with fewer clients first (shorter runs, each on emptied storage), then the run above:",
            "",
        ]
        out += _table(
            ["clients", "seconds", "requests", "per second", "p50 ms", "p95 ms", "p99 ms"],
            (
                [
                    str(p["clients"]),
                    _f(p["seconds"], 1),
                    str(p["requests"]),
                    _f(p["throughput_rps"], 1),
                    _f(p["p50_ms"], 1),
                    _f(p["p95_ms"], 1),
                    _f(p["p99_ms"], 1),
                ]
                for p in sweep
            ),
        )
        out.append("")
    out += [f"![Load run latency against clients]({CHART_DIR.name}/{LOAD_CHART})", ""]
    kinds = load["kinds"]
    out += _table(
        ["kind", "count", "p50 ms", "p95 ms", "p99 ms", "statuses"],
        (
            [
                k,
                str(v["count"]),
                _f(v["p50_ms"], 1),
                _f(v["p95_ms"], 1),
                _f(v["p99_ms"], 1),
                ", ".join(f"{s}: {c}" for s, c in sorted(v["statuses"].items())),
            ]
            for k, v in sorted(kinds.items())
        ),
        "lrrrrl",
    )
    return out


def _latency(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "",
        "## Latency model in AWS",
        "",
        "Predicted time inside Lambda per verb: the handler's measured CPU (own + sdk, p50 for the median and p95",
        "for the tail) stretched by the function's share of a core, plus the verb's request graph above with each",
        "request drawn from a lognormal fitted to the figures below (parallel requests wait for the slowest; steps",
        f"add up; {MODEL_DRAWS} seeded draws). Not modelled: API Gateway's own overhead and Lambda's invoke",
        "overhead (AWS publishes no figure for either), retries, throttling, and cold starts (measured above;",
        'with SnapStart, a restore instead: see "What SnapStart changes in AWS").',
        "",
    ]
    seen: dict[str, list[str]] = {}
    for op, lat in LATENCY.items():
        seen.setdefault(f"{lat.p50_ms:g}|{lat.p95_ms:g}|{lat.basis}", []).append(op)
    out += _table(
        ["requests", "p50 ms", "p95 ms", "basis"],
        ([", ".join(ops), *key.split("|")] for key, ops in seen.items()),
        "lrrl",
    )
    out += [
        "",
        f"Sources: DynamoDB {_DDB_SOURCE}; S3 {_S3_SOURCES}; Lambda CPU {LAMBDA_CPU_SOURCE}. Transactions take",
        "two underlying writes per item (the DynamoDB developer guide's transaction capacity rules), modelled as",
        "twice a single write.",
        "",
    ]
    body = []
    for r in rows:
        p50, p95 = predicted_ms(r)
        body.append(
            [
                r["label"],
                str(r["memory_mb"]),
                _f(1 / cpu_scale(r["memory_mb"])),
                str(depth(r["graph"])),
                _f(p50, 1),
                _f(p95, 1),
            ]
        )
    out += _table(["verb", "memory MB", "CPU share", "depth", "predicted p50 ms", "predicted p95 ms"], body)
    out += ["", f"![Latency model per verb]({CHART_DIR.name}/{LATENCY_CHART})"]
    return out


def _costs(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "",
        "## Cost model",
        "",
        "Dollars per million calls of each verb: the HTTP API request, the Lambda request and its duration at the",
        "function's memory for the predicted median above (billed per ms), DynamoDB on-demand units counted per",
        "request from the items' sizes (eventually consistent reads half, transactional reads and writes double,",
        "a Query's items summed before rounding, ConditionChecks charged as writes), and S3 requests by class.",
        "The write budgets run as shipped: every mutation pays its three meter updates (the caller's, its",
        "account's, its address's; one UpdateItem each, outside the commit, a content write's sent with its S3",
        "put), only at limits the bench never reaches.",
        "Beside it, the published price of the same work in Bedrock AgentCore Memory, where there is a counterpart.",
        "",
    ]
    out += _table(
        ["price", "figure", "source"],
        ([name, fig, src] for name, (fig, src) in PRICE_SOURCES.items()),
        "lll",
    )
    out.append("")
    body = []
    for r in rows:
        c = cost_per_million(r)
        peer = agentcore_counterpart(r["label"])
        if peer is None:
            peer_text, ratio = "no counterpart", "-"
        elif peer[1] == 0:
            peer_text, ratio = f"{peer[0]}: not priced per request", "-"
        else:
            peer_text, ratio = f"{peer[0]}: ${peer[1]:.2f}", f"{peer[1] / c.total:.0f}x"
        body.append(
            [
                r["label"],
                _f(r["rru"], 1),
                _f(r["wru"], 1),
                f"{r['s3_put']:g}/{r['s3_get']:g}",
                _f(c.lambda_requests + c.lambda_duration),
                _f(c.dynamodb),
                _f(c.s3),
                _f(c.total),
                peer_text,
                ratio,
            ]
        )
    out += _table(
        [
            "verb",
            "RRU",
            "WRU",
            "S3 put/get",
            "Lambda $",
            "DynamoDB $",
            "S3 $",
            "total $ / million",
            "AgentCore Memory $ / million",
            "AgentCore / ours",
        ],
        body,
        "lrrrrrrrlr",
    )
    out += [
        "",
        f"![Dollars per million calls against AgentCore Memory]({CHART_DIR.name}/{COST_CHART})",
        "",
        "Every total includes the HTTP API's $1.00. Storage is apart from calls: DynamoDB's table storage and S3",
        "Standard's per GB-month hold documents at their byte size, where AgentCore Memory's long-term records",
        f"cost ${AGENTCORE_RECORD_MONTH_PER_THOUSAND:.2f} per 1,000 a month whatever their size.",
    ]
    return out


# ---- the charts ---------------------------------------------------------------------------------------


def charts(data: dict[str, Any]) -> dict[Path, str]:
    """Every chart the page shows, by file: pure functions of the published data (tests/charts.py)."""
    from . import charts as draw

    rows = data["verbs"]
    out: dict[Path, str] = {}
    predicted = [predicted_ms(r) for r in rows]
    out[CHART_DIR / LATENCY_CHART] = draw.bars(
        "Latency model in AWS per verb (predicted, ms)",
        [r["label"] for r in rows],
        [
            draw.Series("p50", draw.BLUE, [round(p[0], 1) for p in predicted]),
            draw.Series("p95", draw.LIGHT_BLUE, [round(p[1], 1) for p in predicted]),
        ],
        "milliseconds inside Lambda",
        log=True,
    )
    ours, theirs = [], []
    for r in rows:
        peer = agentcore_counterpart(r["label"])
        ours.append(round(cost_per_million(r).total, 2))
        theirs.append(round(peer[1], 2) if peer and peer[1] > 0 else None)
    out[CHART_DIR / COST_CHART] = draw.bars(
        "Dollars per million calls: ours against AgentCore Memory's published price",
        [r["label"] for r in rows],
        [draw.Series("ours", draw.BLUE, ours), draw.Series("AgentCore Memory", draw.ORANGE, theirs)],
        "$ per million calls",
        log=True,
    )
    load = data.get("load")
    if load:
        sweep = load.get("sweep") or [{k: load[k] for k in ("clients", "p50_ms", "p95_ms", "p99_ms", "throughput_rps")}]
        out[CHART_DIR / LOAD_CHART] = draw.lines(
            "Load run through the local gateway: latency against concurrent clients",
            [p["clients"] for p in sweep],
            [
                draw.Series("p50", draw.BLUE, [round(p["p50_ms"], 1) for p in sweep]),
                draw.Series("p95", draw.ORANGE, [round(p["p95_ms"], 1) for p in sweep]),
                draw.Series("p99", draw.RED, [round(p["p99_ms"], 1) for p in sweep]),
            ],
            "concurrent clients",
            "ms per request (all kinds)",
        )
    cold = data.get("cold_start")
    if cold:
        ordered = sorted(cold["rows"], key=lambda r: (-float(r["process_ms"]), r["function"]))
        out[CHART_DIR / COLD_CHART] = draw.bars(
            f"Cold start per function: process start to first answer, x a bare import boto3 "
            f"({cold['boto3_ms']:.0f} ms)",
            [r["function"] for r in ordered],
            [draw.Series("x boto3", draw.BLUE, [round(r["process_ms"] / cold["boto3_ms"], 2) for r in ordered])],
            "times a bare `python -c 'import boto3'` process",
            line=(cold["target"], f"target {cold['target']:g}x"),
            row_height=11,
        )
    return out


# ---- the drift check ----------------------------------------------------------------------------------


def _template_memory() -> dict[str, int]:
    sys.path.insert(0, str(ROOT / "shared"))
    from agent_memory_sdk.local.template import load_template

    doc = load_template(ROOT / "template.yaml")
    default = int(doc["Globals"]["Function"]["MemorySize"])
    out = {}
    for res in doc["Resources"].values():
        if res.get("Type") == "AWS::Serverless::Function":
            props = res.get("Properties") or {}
            out[Path(str(props["CodeUri"])).name] = int(props.get("MemorySize", default))
    return out


def _local(scale: dict[str, Any] | None, soak: dict[str, Any] | None, run: dict[str, Any]) -> list[str]:
    """The local service itself (`make run`): a write's cost as the table grows, and its memory over a soak."""
    out = ["", "## The local service", ""]
    if run.get("seconds"):
        peaks = ", ".join(f"{k} {v:.0f} MiB" for k, v in sorted(run.get("peak_rss_mb", {}).items()) if v)
        out += [f"This bench ran in {run['seconds']:.0f} s; peak resident memory: {peaks}.", ""]
    if scale:
        out += [
            f"A conditional write ({scale['verb']}) through its handler, with the table holding 1,000 items and",
            "then 100,000 (filler items in partitions of their own), in one run on one storage; the full run goes",
            "1,000, 100,000, 1,000, 100,000 and pools each size's calls. The storage's writes must cost what they",
            f"touch: target at most {scale['target']}x.",
            "",
        ]
        out += _table(
            ["items stored", "calls", "p50 ms"],
            ([f"{r['items']:,}", str(r["n"]), _f(r["p50_ms"])] for r in scale["rows"]),
        )
        out += ["", f"Ratio: {scale['ratio']:.2f}x ({'met' if scale['ok'] else 'MISSED'}).", ""]
    if soak:
        out += [
            f"The soak (`python -m tests.soak`): one `agent-memory serve` process on a data folder, {soak['clients']}",
            "clients through the local gateway mixing conversation writes, forks, Memory file writes, record appends",
            "and creates (each client deleting again what it made once it holds a few), with a sweep of what deletes",
            f"left every {soak['sweep_every']:,} writes (the clients holding off while it runs); resident memory "
            "sampled every few seconds. "
            f"{soak['writes']:,} accepted writes in",
            f"{soak['seconds']:.0f} s ({soak['writes_per_second']:.0f} a second, one process on this machine).",
            "",
        ]
        out += _table(
            ["RSS", "MiB"],
            [
                ["after warm-up (a fifth of the writes)", _f(soak["warm_mb"], 0)],
                ["at half the writes", _f(soak["half_mb"], 0)],
                ["at the end", _f(soak["final_mb"], 0)],
                ["peak", _f(soak["peak_mb"], 0)],
            ],
        )
        flat = (
            f"the second half added {soak['growth']:.1%} (target at most {soak['flat_goal']:.0%})"
            if soak.get("flat_judged", True)
            else f"the second half added {soak['growth']:.1%} (too short a run to judge flatness)"
        )
        out += [
            "",
            f"Goal: at most {soak['goal_mb']:.0f} MiB; {flat}: {'met' if soak['ok'] else 'MISSED'}.",
            "",
            f"![RSS over accepted writes]({CHART.name})",
        ]
    return out


def chart(soak: dict[str, Any] | None) -> str:
    """The soak's RSS over accepted writes as an SVG line (no plotting library: a few lines of markup)."""
    samples = (soak or {}).get("samples") or [[0, 0, 0]]
    width, height, pad = 640, 280, 48
    top_writes = max(s[1] for s in samples) or 1
    top_mb = max(max(s[2] for s in samples), 1.0) * 1.1
    goal = (soak or {}).get("goal_mb", 1024)

    def xy(writes: float, mb: float) -> tuple[float, float]:
        x = pad + (width - 2 * pad) * writes / top_writes
        y = height - pad - (height - 2 * pad) * min(mb, top_mb) / top_mb
        return round(x, 1), round(y, 1)

    points = " ".join(f"{x},{y}" for x, y in (xy(s[1], s[2]) for s in samples))
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle">Server RSS (MiB) over accepted writes</text>',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="black"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>',
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{points}"/>',
    ]
    for k in range(5):
        mb = top_mb * k / 4
        _, y = xy(0, mb)
        lines.append(f'<text x="{pad - 6}" y="{y + 4}" text-anchor="end">{mb:.0f}</text>')
        writes = top_writes * k / 4
        x, _ = xy(writes, 0)
        lines.append(f'<text x="{x}" y="{height - pad + 18}" text-anchor="middle">{writes:,.0f}</text>')
    if goal <= top_mb:
        _, y = xy(0, goal)
        lines.append(f'<line x1="{pad}" y1="{y}" x2="{width - pad}" y2="{y}" stroke="#d62728" stroke-dasharray="6 4"/>')
        lines.append(f'<text x="{width - pad}" y="{y - 6}" text-anchor="end" fill="#d62728">goal {goal:.0f}</text>')
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def problems(data: dict[str, Any], page: str) -> list[str]:
    found = []
    if render(data) != page:
        found.append(f"{PAGE.relative_to(ROOT)} differs from what {DATA.relative_to(ROOT)} renders")
    if data.get("soak") and (not CHART.exists() or CHART.read_text() != chart(data["soak"])):
        found.append(f"{CHART.relative_to(ROOT)} differs from what {DATA.relative_to(ROOT)} draws")
    for path, svg in charts(data).items():
        if not path.exists() or path.read_text() != svg:
            found.append(f"docs/{path.parent.name}/{path.name} differs from what {DATA.relative_to(ROOT)} draws")
    from . import bench

    expected = set()
    for verb in bench.VERBS:
        expected.add(verb.name)
        if verb.cold is not None:
            expected.add(f"{verb.name} (cold)")
    listed = {r["label"] for r in data["verbs"]}
    if expected - listed:
        found.append(f"verbs the bench runs but the page does not list: {sorted(expected - listed)}")
    if listed - expected:
        found.append(f"verbs the page lists but the bench no longer runs: {sorted(listed - expected)}")
    first = {f["verb"] for f in data.get("first_calls") or []}
    if first and listed - first:
        found.append(f"verbs without a first-request figure: {sorted(listed - first)}")
    memory = _template_memory()
    for r in data["verbs"]:
        if memory.get(r["function"]) != r["memory_mb"]:
            found.append(
                f"{r['label']}: {r['function']} has {memory.get(r['function'])} MB now, the page {r['memory_mb']}"
            )
    cold = data.get("cold_start")
    if cold:
        missing = set(memory) - {r["function"] for r in cold["rows"]} - {"sweeper"}
        if cold["which"] == "all" and missing:
            found.append(f"functions without a cold-start figure: {sorted(missing)}")
    return found


def write(data: dict[str, Any]) -> None:
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    _draw(data)


def _draw(data: dict[str, Any]) -> None:
    PAGE.write_text(render(data))
    if data.get("soak"):
        CHART.write_text(chart(data["soak"]))
    CHART_DIR.mkdir(exist_ok=True)
    for path, svg in charts(data).items():
        path.write_text(svg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.perfdoc", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the page drifted from its data or the code")
    args = parser.parse_args(argv)
    data = json.loads(DATA.read_text())
    if not args.check:
        _draw(data)
        return 0
    found = problems(data, PAGE.read_text())
    for p in found:
        print(f"docs/performance.md drift: {p}", file=sys.stderr)
    if found:
        print("Run `make bench` (or `python -m tests.perfdoc` after editing the models) and commit.", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
