"""`make bench`: AWS requests per call and the handlers' own time, per memory verb.

Not a pytest module (the name keeps it out of collection). It starts the service with `start_local`, as
`agent-memory serve` does, on the same serialised moto: by default in a child process, reached through
AWS_ENDPOINT_URL, so moto's work cannot take the GIL from the handler being timed (`--storage thread`
keeps it in this process). It then calls each function's real Lambda handler in-process with an HTTP API
v2 event: the measured path is the deployed one minus API Gateway and the HTTP server.

Every botocore call is counted (event hooks on the store's clients) and timed (the client's
`_make_api_call` wrapped); a call's "own" time is its wall time minus the union of the spans spent
inside AWS calls, so parallel queries are not subtracted twice. With moto in a child process the
process's CPU time is measured too: "own cpu" does not move with the load of a shared machine, and
"sdk cpu" is botocore's own work (building, signing, parsing requests), which Lambda pays as well.

After the warm tables, two cold-start tables (tests/coldstart.py): each verb's first request in a fresh
process (import, first call) beside its warm figure, and every function's process start to first answer
beside a bare `import boto3` process measured in the same run (median of 7 for a representative set, 3 for
the rest; `--imports some|none` shortens it), each run a successful call of its own (tests/coldcases.py).
`--cold-only [f1,f2]` runs that table alone, for every function or the ones named (7 runs each).

Run: `.venv/bin/python -m tests.bench [--quick] [--only show,list] [--profile show]`.
To add a verb (the memory block, fork, ...) append one `Verb` to `VERBS`. A target may also name the exact
count of each operation (`Target.ops`), e.g. that a write's version record rides in its one commit.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.core.model import Anchor, Author
from agent_memory.store import CACHE, aws_clients, get_store
from agent_memory.store import keys as store_keys
from agent_memory_sdk.local.gateway import build_event
from agent_memory_sdk.local.runtime import LocalService, start_local

from . import coldstart, perfdoc
from .capacity import CapacityMeter, Usage, s3_requests
from .support import pct

API = "/agent_api/v1"
OWN_TARGET_MS = 1.0
MIN_N = 5  # fewest measured calls per row, even when its time budget has run out

# ---- counting and timing AWS calls ----------------------------------------------------------------

Span = tuple[int, int]


@dataclass
class Sample:
    """One handler call: its wall time and everything it asked of AWS."""

    total_ns: int
    aws_ns: int
    ops: Counter[str]
    cpu_ns: int  # this process's CPU time over the call, every thread
    aws_cpu_ns: int  # of which spent inside botocore calls
    spans: list[tuple[int, int, str]] = field(default_factory=list)  # each AWS call: start, end, operation

    @property
    def own_ns(self) -> int:
        return self.total_ns - self.aws_ns

    @property
    def own_cpu_ns(self) -> int:
        return max(0, self.cpu_ns - self.aws_cpu_ns)


def request_graph(spans: list[tuple[int, int, str]]) -> list[dict[str, Any]]:
    """The call's request graph, as steps: {"ops": {operation: count}, "width": calls in flight at once}.

    A call's step is one past the latest step among the calls that ended before it began, so calls sent
    together (parallel Queries) share a step and a call sent after them is the next. A fan-out through a
    bounded pool (the block's S3 reads, 16 at a time) shows up as a run of steps of one operation; those
    fold into one step whose width is the most calls seen in flight together."""
    ordered = sorted(spans)
    levels: list[int] = []
    for k, (start, _, _) in enumerate(ordered):
        levels.append(1 + max((levels[j] for j in range(k) if ordered[j][1] <= start), default=0))
    grouped: dict[int, list[tuple[int, int, str]]] = {}
    for level, span in zip(levels, ordered, strict=True):
        grouped.setdefault(level, []).append(span)
    steps: list[list[tuple[int, int, str]]] = []
    for level in sorted(grouped):
        calls = grouped[level]
        ops = {op for _, _, op in calls}
        if steps and len(ops) == 1 and {op for _, _, op in steps[-1]} == ops and len(steps[-1]) > 1:
            steps[-1] += calls  # the pool's next wave
        else:
            steps.append(list(calls))
    graph = []
    for calls in steps:
        counted = Counter(op.split(":")[1] for _, _, op in calls)
        graph.append({"ops": dict(sorted(counted.items())), "width": _most_in_flight(calls)})
    return graph


def _most_in_flight(calls: list[tuple[int, int, str]]) -> int:
    edges = sorted([(s, 1) for s, _, _ in calls] + [(e, -1) for _, e, _ in calls])
    most = now = 0
    for _, delta in edges:  # an end sorts before a start at the same instant
        now += delta
        most = max(most, now)
    return most


def _union_ns(spans: list[Span]) -> int:
    """Length of the union of spans: queries run in parallel threads must not be subtracted twice."""
    total, end = 0, -1
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


class AwsMeter:
    """Counts operations with botocore's event hooks; times each call, in wall time and in CPU time.

    The store may call AWS from its thread pool (list and grep query anchors in parallel), so the
    recorder is shared across threads; only one handler call is measured at a time.
    """

    def __init__(self) -> None:
        self.active = False
        self.ops: Counter[str] = Counter()
        self.calls: list[Span] = []
        self.spans: list[tuple[int, int, str]] = []
        self.cpu: list[int] = []
        # On in a pass of its own (never while timing): works out each call's billed units with side calls.
        self.capacity: CapacityMeter | None = None
        self._capacity_lock = threading.Lock()

    def attach(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-call", self._count)
        inner = client._make_api_call
        service = client.meta.service_model.service_name

        def timed(operation_name: str, api_params: dict[str, Any]) -> Any:
            if self.capacity is not None:
                with self._capacity_lock:
                    old = self.capacity.before(inner, operation_name, api_params)
                result = inner(operation_name, api_params)
                with self._capacity_lock:
                    self.capacity.after(inner, service, operation_name, api_params, old)
                return result
            if not self.active:
                return inner(operation_name, api_params)
            start, cpu = time.perf_counter_ns(), time.thread_time_ns()
            try:
                return inner(operation_name, api_params)
            finally:
                end = time.perf_counter_ns()
                self.calls.append((start, end))
                self.spans.append((start, end, f"{service}:{operation_name}"))
                self.cpu.append(time.thread_time_ns() - cpu)

        # The generated client methods call self._make_api_call, so an instance attribute intercepts them.
        client._make_api_call = timed

    def _count(self, event_name: str, **_: Any) -> None:
        if self.active:
            service, operation = event_name.split(".", 2)[1:]
            self.ops[f"{service}:{operation}"] += 1

    def begin(self) -> None:
        self.ops, self.calls, self.spans, self.cpu = Counter(), [], [], []
        self.active = True

    def end(self, total_ns: int, cpu_ns: int) -> Sample:
        self.active = False
        return Sample(total_ns, _union_ns(self.calls), self.ops, cpu_ns, sum(self.cpu), self.spans)


# ---- calling the handlers in-process ---------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One handler call. Its event is built before the clock starts: API Gateway builds it, not us."""

    method: str
    path: str
    token: str | None = None
    body: dict[str, Any] | None = None
    query: str = ""
    expect: int = 200
    headers: dict[str, str] = field(default_factory=dict)


class Harness:
    def __init__(self, service: LocalService) -> None:
        self.service = service
        self.gateway = service.gateway
        self.meter = AwsMeter()
        for client in aws_clients():
            self.meter.attach(client)

    def event(self, step: Step) -> tuple[Callable[[dict[str, Any], Any], dict[str, Any]], dict[str, Any]]:
        full = f"{API}{step.path}"
        found = self.gateway.match(step.method, full)
        if found is None:
            raise LookupError(f"no route {step.method} {full}")
        route, params = found
        headers = {"content-type": "application/json", **step.headers}
        if step.token:
            headers["authorization"] = f"Bearer {step.token}"
        raw = json.dumps(step.body).encode() if step.body is not None else b""
        return self.gateway.handlers[route.function], build_event(
            route, step.method, full, step.query, headers, raw, params
        )

    def function_of(self, step: Step) -> str:
        """The function folder (functions/<name>/) whose Lambda answers the step."""
        found = self.gateway.match(step.method, f"{API}{step.path}")
        assert found is not None
        return Path(found[0].code_uri).name

    def call(self, step: Step) -> dict[str, Any]:
        """An untimed call (setting the stage); refuses any status but the expected one."""
        handler, event = self.event(step)
        return _checked(step, handler(event, None))

    def usage(self, step: Step) -> tuple[Usage, dict[str, Any]]:
        """An untimed call whose billed DynamoDB units are worked out (tests/capacity.py)."""
        handler, event = self.event(step)
        self.meter.capacity = CapacityMeter()
        try:
            result = handler(event, None)
            usage = self.meter.capacity.usage
        finally:
            self.meter.capacity = None
        return usage, _checked(step, result)

    def measure(self, step: Step) -> tuple[Sample, dict[str, Any]]:
        handler, event = self.event(step)
        self.meter.begin()
        cpu, start = time.process_time_ns(), time.perf_counter_ns()
        result = handler(event, None)
        sample = self.meter.end(time.perf_counter_ns() - start, time.process_time_ns() - cpu)
        return sample, _checked(step, result)


def _checked(step: Step, result: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(result["body"]) if result.get("body") else {}
    if result["statusCode"] != step.expect:
        raise AssertionError(f"{step.method} {step.path}: {result['statusCode']} {body}")
    out: dict[str, Any] = body
    return out


# ---- the world the verbs act on --------------------------------------------------------------------


def _markdown(title: str, lines: int) -> str:
    body = [f"# {title}", ""]
    body += [f"- item {i}: remember the {title} detail number {i} for later" for i in range(lines)]
    return "\n".join(body) + "\n"


def _write_body(path: str, content: str, pid: str | None = None, lv: int | None = None) -> dict[str, Any]:
    """A write request: a create unless (pid, lv) names the version it replaces."""
    return {"memory": {"path": path, "content": content, "expected_public_id": pid, "expected_lock_version": lv}}


@dataclass
class World:
    """One account, one workspace, one Human-answered conversation with a few documents in each root."""

    h: Harness
    token: str = ""
    ws: str = ""
    conv: str = ""
    # The history verbs' documents live in a conversation of their own, so list's and grep's counts stay
    history_conv: str = ""
    # An organization Memory with one file, for its files door.
    mem: str = ""
    pairs: dict[str, tuple[str, int]] = field(default_factory=dict)
    counter: int = 0
    bound_anchors: int = 2  # the default roots a Human-answered conversation can use: conversation, workspace

    @property
    def conv_mem(self) -> str:
        return f"/workspaces/{self.ws}/conversations/{self.conv}/memory"

    @property
    def ws_mem(self) -> str:
        return f"/workspaces/{self.ws}/memory"

    @property
    def history_mem(self) -> str:
        return f"/workspaces/{self.ws}/conversations/{self.history_conv}/memory"

    def build(self) -> World:
        out = self.h.call(
            Step(
                "POST",
                "/accounts",
                body={"account": {"name": "bench"}, "human": {"name": "ada"}},
                headers={"x-operator-key": self.h.service.operator_key},
                expect=201,
            )
        )
        self.token = out["token"]
        self.ws = self.h.call(Step("POST", "/workspaces", self.token, {"workspace": {"name": "bench"}}, expect=201))[
            "workspace"
        ]["public_id"]
        self.conv = self.h.call(
            Step("POST", f"/workspaces/{self.ws}/conversations", self.token, {"conversation": {}}, expect=201)
        )["conversation"]["public_id"]
        for i in range(6):
            self.write(self.conv_mem, f"conversation/notes/topic-{i}.md", _markdown(f"topic {i}", 40))
        for i in range(4):
            self.write(self.ws_mem, f"workspace/shared-{i}.md", _markdown(f"shared {i}", 40))
        self.write(self.conv_mem, "conversation/replace.md", _markdown("replace", 40))
        self.write(self.conv_mem, "conversation/counter.md", "count: 0\n" + _markdown("counter", 40))
        # History: a document with versions to show, one to roll back and forth, one to redact from
        self.history_conv = self.h.call(
            Step("POST", f"/workspaces/{self.ws}/conversations", self.token, {"conversation": {}}, expect=201)
        )["conversation"]["public_id"]
        for k in range(3):
            self.write(self.history_mem, HISTORY_DOC, _markdown(f"history {k}", 40))
        for k in range(2):
            self.write(self.history_mem, ROLLBACK_DOC, _markdown(f"rollback {k}", 40))
        self.write(self.history_mem, REDACT_DOC, _markdown("redact", 40))
        made = self.h.call(
            Step(
                "POST",
                "/memories",
                self.token,
                {"memory": {"name": "bench", "files": [{"path": MEMORY_FILE, "content": _markdown("file", 40)}]}},
                expect=201,
            )
        )
        self.mem = made["memory"]["memory_id"]
        shown = self.h.call(
            Step("POST", f"/memories/{self.mem}/files/show", self.token, {"file": {"path": MEMORY_FILE}})
        )
        self.pairs[f"memory:{MEMORY_FILE}"] = (shown["file"]["public_id"], shown["file"]["lock_version"])
        return self

    def write(self, base: str, path: str, content: str) -> dict[str, Any]:
        body = _write_body(path, content, *self.pairs.get(path, (None, None)))
        out = self.h.call(Step("POST", base, self.token, body, expect=201))
        self.remember(out)
        return out

    def remember(self, out: dict[str, Any]) -> None:
        m = out["memory"]
        self.pairs[m["path"]] = (m["public_id"], m["lock_version"])

    def forget(self, base: str, path: str) -> None:
        pid, lv = self.pairs.pop(path)
        self.h.call(
            Step(
                "POST",
                f"{base}/delete",
                self.token,
                {"memory": {"path": path, "expected_public_id": pid, "expected_lock_version": lv}},
                expect=204,
            )
        )


# ---- the verbs: one entry each --------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What the design promises per call, by service; `note` says where the number comes from."""

    dynamodb: int
    s3: int
    note: str
    # The counts are upper bounds: a grep stopped by its deadline fetches fewer documents.
    at_most: bool = False
    # The handler's own time a call may take (the worst-case grep searches megabytes by design).
    own_ms: float = OWN_TARGET_MS
    # When given, every call makes exactly these operations, each this many times, and no other.
    ops: dict[str, int] | None = None

    def met(self, samples: list[Sample]) -> bool:
        _, ddb, s3 = ops_text(samples)
        within = (ddb <= self.dynamodb, s3 <= self.s3) if self.at_most else (ddb == self.dynamodb, s3 == self.s3)
        ok = all(within)
        if self.ops is not None:
            ok &= all({op.split(":")[1]: n for op, n in s.ops.items()} == self.ops for s in samples)
        return ok


@dataclass(frozen=True)
class Verb:
    name: str
    target: Target
    # Untimed: builds iteration i's call, and may set the stage first (e.g. create what delete removes).
    prepare: Callable[[World, int], Step]
    # Untimed: sees the response, e.g. to carry a new (public_id, lock_version) or clean up a create.
    after: Callable[[World, int, dict[str, Any]], None] | None = None
    # Also measure with the content cache emptied before each call (a cold container's first read).
    cold: Target | None = None


def _show(w: World, i: int) -> Step:
    return Step("POST", f"{w.conv_mem}/show", w.token, {"memory": {"path": "conversation/notes/topic-1.md"}})


def _ws_show(w: World, i: int) -> Step:
    return Step("POST", f"{w.ws_mem}/show", w.token, {"memory": {"path": "workspace/shared-1.md"}})


def _list(w: World, i: int) -> Step:
    return Step("GET", w.conv_mem, w.token)


def _grep(w: World, i: int) -> Step:
    return Step("POST", f"{w.conv_mem}/grep", w.token, {"memory": {"pattern": r"detail number 3\d"}})


def _grep_literal(w: World, i: int) -> Step:
    # Plain words, the usual case: answered by a substring search of the text instead of the regex engine.
    body = {"memory": {"pattern": "Detail Number 37", "ignore_case": True}}
    return Step("POST", f"{w.conv_mem}/grep", w.token, body)


def _create(w: World, i: int) -> Step:
    body = _write_body(f"conversation/new-{i}.md", _markdown(f"new {i}", 20))
    return Step("POST", w.conv_mem, w.token, body, expect=201)


def _uncreate(w: World, i: int, out: dict[str, Any]) -> None:
    # The 64-document bound would stop a long run: every created document is removed again, untimed.
    w.remember(out)
    w.forget(w.conv_mem, out["memory"]["path"])


def _replace(w: World, i: int) -> Step:
    body = _write_body("conversation/replace.md", _markdown(f"replace {i}", 40), *w.pairs["conversation/replace.md"])
    return Step("POST", w.conv_mem, w.token, body, expect=201)


MEMORY_FILE = "runbooks/deploy.md"


def _file_show(w: World, i: int) -> Step:
    return Step("POST", f"/memories/{w.mem}/files/show", w.token, {"file": {"path": MEMORY_FILE}})


def _file_write(w: World, i: int) -> Step:
    pid, lv = w.pairs[f"memory:{MEMORY_FILE}"]
    file = {
        "path": MEMORY_FILE,
        "content": _markdown(f"file {i}", 40),
        "expected_public_id": pid,
        "expected_lock_version": lv,
    }
    return Step("POST", f"/memories/{w.mem}/files", w.token, {"file": file}, expect=201)


# A session of the bench's conversation that mounts the bench's Memory, started on first use (untimed).
MOUNT = "/workspace/bench"
_sessions: dict[int, str] = {}


def _session(w: World) -> str:
    found = _sessions.get(id(w))
    if found is not None:
        return found
    mounts = [{"memory": w.mem, "path": MOUNT, "mode": "readwrite"}]
    body = {"execution": {"capabilities": [{"ref": "memory", "config": {"mounts": mounts}}]}}
    out = w.h.call(Step("POST", f"/workspaces/{w.ws}/conversations/{w.conv}/executions", w.token, body, expect=201))
    _sessions[id(w)] = out["execution"]["public_id"]
    return _sessions[id(w)]


def _mounted_write(w: World, i: int) -> Step:
    """The same file as the Memory's own door writes, through the session's mount of it."""
    pid, lv = w.pairs[f"memory:{MEMORY_FILE}"]
    file = {
        "path": f"{MOUNT}/{MEMORY_FILE}",
        "content": _markdown(f"mounted {i}", 40),
        "expected_public_id": pid,
        "expected_lock_version": lv,
    }
    return Step("POST", f"/executions/{_session(w)}/files/write", w.token, {"file": file}, expect=201)


def _file_written(w: World, i: int, out: dict[str, Any]) -> None:
    w.pairs[f"memory:{MEMORY_FILE}"] = (out["file"]["public_id"], out["file"]["lock_version"])


def _edit(w: World, i: int) -> Step:
    pid, lv = w.pairs["conversation/counter.md"]
    body = {
        "memory": {
            "path": "conversation/counter.md",
            "old_text": f"count: {w.counter}\n",
            "new_text": f"count: {w.counter + 1}\n",
            "expected_public_id": pid,
            "expected_lock_version": lv,
        }
    }
    return Step("POST", f"{w.conv_mem}/edit", w.token, body)


def _edited(w: World, i: int, out: dict[str, Any]) -> None:
    w.remember(out)
    w.counter += 1


def _delete(w: World, i: int) -> Step:
    path = f"conversation/gone-{i}.md"
    w.write(w.conv_mem, path, "short-lived\n")
    pid, lv = w.pairs.pop(path)
    body = {"memory": {"path": path, "expected_public_id": pid, "expected_lock_version": lv}}
    return Step("POST", f"{w.conv_mem}/delete", w.token, body, expect=204)


def _show_conversation(w: World, i: int) -> Step:
    return Step("GET", f"/workspaces/{w.ws}/conversations/{w.conv}", w.token)


# ---- history: the versions of a document, one version, rollback, redaction, promote -----------------

HISTORY_DOC = "conversation/history.md"
ROLLBACK_DOC = "conversation/rollback.md"
REDACT_DOC = "conversation/redact.md"


def _versions(w: World, i: int) -> Step:
    return Step("POST", f"{w.history_mem}/versions", w.token, {"memory": {"path": HISTORY_DOC}})


def _version_show(w: World, i: int) -> Step:
    body = {"memory": {"path": HISTORY_DOC, "lock_version": 1}}
    return Step("POST", f"{w.history_mem}/versions/show", w.token, body)


def _version_change(path: str, lock_version: int, pair: tuple[str, int]) -> dict[str, Any]:
    return {
        "memory": {
            "path": path,
            "lock_version": lock_version,
            "expected_public_id": pair[0],
            "expected_lock_version": pair[1],
        }
    }


def _rollback(w: World, i: int) -> Step:
    # Back to the version before the current one: the document's two texts take turns
    pid, lv = w.pairs[ROLLBACK_DOC]
    body = _version_change(ROLLBACK_DOC, lv - 1, (pid, lv))
    return Step("POST", f"{w.history_mem}/rollback", w.token, body, expect=201)


def _redact(w: World, i: int) -> Step:
    # A new version first (untimed), so the one it supersedes can be redacted; nothing else holds its bytes
    w.write(w.history_mem, REDACT_DOC, _markdown(f"redact {i}", 40))
    pid, lv = w.pairs[REDACT_DOC]
    body = _version_change(REDACT_DOC, lv - 1, (pid, lv))
    return Step("POST", f"{w.history_mem}/versions/redact", w.token, body)


def _promotion(source: dict[str, Any], target: str) -> Callable[[World, int], Step]:
    def prepare(w: World, i: int) -> Step:
        pid, lv = w.pairs.get(target, (None, None))
        body = {
            "promote": {
                "source": source,
                "target_path": target,
                "expected_public_id": pid,
                "expected_lock_version": lv,
            }
        }
        return Step("POST", f"{w.ws_mem}/promote", w.token, body, expect=201)

    return prepare


def _promote_from_conversation(w: World, i: int) -> Step:
    source = {"conversation_public_id": w.conv, "path": "conversation/notes/topic-1.md", "lock_version": 0}
    return _promotion(source, "workspace/promoted.md")(w, i)


_promote_within_workspace = _promotion({"path": "workspace/shared-1.md", "lock_version": 0}, "workspace/copied.md")


# ---- the memory block: 4 anchors x 64 documents, in a workspace of its own so the other verbs' counts
# (list, grep) are unchanged. Every document is 1000 bytes, and group/ is written last, so its documents
# are the newest and the number a budget includes is known in advance.

BLOCK_DOCS = 64
BLOCK_DOC_BYTES = 1000
_BLOCK_ROOTS = ("conversation", "workspace", "user", "group")
_block_worlds: dict[int, str] = {}


def _block_conversation(w: World) -> str:
    """The block conversation's URL; its world is built on first use, untimed (prepare is not measured)."""
    url = _block_worlds.get(id(w))
    if url is not None:
        return url
    ws = w.h.call(Step("POST", "/workspaces", w.token, {"workspace": {"name": "block"}}, expect=201))
    ws_id = ws["workspace"]["public_id"]

    def conversation(fields: dict[str, Any]) -> str:
        out = w.h.call(
            Step("POST", f"/workspaces/{ws_id}/conversations", w.token, {"conversation": fields}, expect=201)
        )
        return str(out["conversation"]["public_id"])

    group = conversation({})
    bindings = [{"name": r, "scope": r, "access": "read_write"} for r in ("conversation", "workspace", "user")]
    bindings.append({"name": "group", "scope": "conversation", "access": "read", "conversation_public_id": group})
    conv = conversation({"memory_context": {"bindings": bindings}})
    for root in _BLOCK_ROOTS:
        owner, path_root = (group, "conversation") if root == "group" else (conv, root)
        for i in range(BLOCK_DOCS):
            content = (_markdown(f"{root} block {i}", 20) * 2)[:BLOCK_DOC_BYTES]
            body = _write_body(f"{path_root}/b-{i:02d}.md", content)
            w.h.call(Step("POST", f"/workspaces/{ws_id}/conversations/{owner}/memory", w.token, body, expect=201))
    url = f"/workspaces/{ws_id}/conversations/{conv}/memory_block"
    _block_worlds[id(w)] = url
    return url


def _memory_block(budget: int) -> Callable[[World, int], Step]:
    def prepare(w: World, i: int) -> Step:
        return Step("POST", _block_conversation(w), w.token, {"memory_block": {"budget_bytes": budget}})

    return prepare


def _block_included(budget: int) -> int:
    """Documents a budget includes: group/'s 64 are the newest and cost the same each; 1 MiB holds all 256."""
    from agent_memory.domain.memory.block import Entry, section_cost

    fits = budget // section_cost(Entry("group/b-00.md", BLOCK_DOC_BYTES, "2026-01-01T00:00:00.000Z"))
    return fits if fits < BLOCK_DOCS else len(_BLOCK_ROOTS) * BLOCK_DOCS


_BLOCK_READ = "batch read + GetItem (the group/ alias) + 1 Query per anchor, 4 in parallel"
_BLOCK_SMALL, _BLOCK_WHOLE = 16 * 1024, 1024 * 1024


# ---- grep's worst case: 16 bound roots (conversation, workspace and 14 read-only aliases) x 64 documents
# x 64 KiB, 64 MiB in all, grepped with a regex that matches nothing, so every document within the request's
# byte budget is fetched and searched. The rows and objects are seeded straight into storage (untimed):
# 1024 writes through the handlers would take most of a --quick run.

GREP_WORST = "grep worst 16x64x64K"
GREP_ROOTS = 16
GREP_DOCS = 64
GREP_DOC_BYTES = 64 * 1024
_grep_worlds: dict[int, str] = {}


def _grep_worst_url(w: World) -> str:
    """The grep URL of the 16-root conversation, seeding its world on first use (untimed)."""
    url = _grep_worlds.get(id(w))
    if url is not None:
        return url
    from concurrent.futures import ThreadPoolExecutor

    from agent_memory.core.ids import now_iso, sha256_hex, uuid7
    from agent_memory.core.model import Document
    from agent_memory.store.kinds import DOCUMENT, META

    ws = w.h.call(Step("POST", "/workspaces", w.token, {"workspace": {"name": "grep"}}, expect=201))
    ws_id = ws["workspace"]["public_id"]

    def conversation(fields: dict[str, Any]) -> str:
        out = w.h.call(
            Step("POST", f"/workspaces/{ws_id}/conversations", w.token, {"conversation": fields}, expect=201)
        )
        return str(out["conversation"]["public_id"])

    others = [conversation({}) for _ in range(GREP_ROOTS - 2)]
    bindings: list[dict[str, Any]] = [
        {"name": "conversation", "scope": "conversation", "access": "read_write"},
        {"name": "workspace", "scope": "workspace", "access": "read_write"},
    ]
    bindings += [
        {"name": f"g{k:02d}", "scope": "conversation", "access": "read", "conversation_public_id": other}
        for k, other in enumerate(others)
    ]
    conv = conversation({"memory_context": {"bindings": bindings}})
    anchors = [Anchor("conversation", conv), Anchor("workspace", ws_id)]
    anchors += [Anchor("conversation", other) for other in others]
    store = get_store()
    text = _grep_worst_text()
    data = text.encode()
    docs = [
        Document(
            anchor,
            f"big-{i:02d}.md",
            uuid7(),
            0,
            len(data),
            sha256_hex(data),
            None,
            now_iso(),
            f"content/bench-grep/{uuid7()}",
            Author("human", "bench", "bench"),
        )
        for anchor in anchors
        for i in range(GREP_DOCS)
    ]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda d: store.put_content(d.content_key, text), docs))
    items = [DOCUMENT.item(d) for d in docs] + [META.item(GREP_DOCS, anchor=a.key) for a in anchors]
    for k in range(0, len(items), 25):
        batch = [{"PutRequest": {"Item": it}} for it in items[k : k + 25]]
        store.ddb.batch_write_item(RequestItems={store.table: batch})
    CACHE.clear()
    url = f"/workspaces/{ws_id}/conversations/{conv}/memory/grep"
    _grep_worlds[id(w)] = url
    return url


def _grep_worst_text() -> str:
    line = "- a line of ordinary notes, sixty-four bytes long, to be searched\n"
    return (line * (GREP_DOC_BYTES // len(line) + 1))[:GREP_DOC_BYTES]


def grep_cpu_per_mib() -> list[tuple[str, float, float]]:
    """(pattern, whole-document ms, line-by-line ms) of regex CPU per MiB searched: the worst case's and
    the regex row's pattern over 16 of the worst case's documents, median of 5, side by side in one run."""
    from agent_memory.domain.memory.matching import LineMatcher

    texts = [_grep_worst_text()] * 16
    mib = sum(len(t) for t in texts) / 2**20
    rows = []
    for pattern in (r"no such \w+ here", r"detail number 3\d"):
        ms_per_mib = []
        for by_line in (False, True):
            samples = []
            for _ in range(5):
                matcher = LineMatcher(pattern, False, by_line=by_line)
                cpu = time.thread_time_ns()
                for text in texts:
                    for _found in matcher.lines(text, time.monotonic() + 60):
                        pass
                samples.append((time.thread_time_ns() - cpu) / 1e6 / mib)
            ms_per_mib.append(pct(samples, 50))
        rows.append((pattern, ms_per_mib[0], ms_per_mib[1]))
    return rows


def _grep_worst(w: World, i: int) -> Step:
    return Step("POST", _grep_worst_url(w), w.token, {"memory": {"pattern": r"no such \w+ here"}})


GREP_REASONS: Counter[str] = Counter()


def _grep_worst_answered(w: World, i: int, out: dict[str, Any]) -> None:
    # Why each answer stopped: the byte budget when everything within it was searched, else the deadline.
    GREP_REASONS[str(out["truncated_reason"])] += 1


def _grep_worst_target(cold: bool) -> Target:
    from agent_memory.domain.memory.service import GREP_BYTE_BUDGET, GREP_DEADLINE_SECONDS

    within = GREP_BYTE_BUDGET // GREP_DOC_BYTES
    note = (
        f"batch reads + 1 Query per root; {'at most one S3 get per document within the budget' if cold else 'cached'}"
    )
    return Target(2 + GREP_ROOTS, within if cold else 0, note, at_most=True, own_ms=GREP_DEADLINE_SECONDS * 1000 + 500)


_BATCH = "one BatchGetItem: token+workspace+member+conversation(+document)"
# The write budget's meters every mutation spends before its commit, one UpdateItem each, sent together: the
# caller's, its account's and its address's (the bench runs with all three on, isolate_environment).
METERS = 3
_METERED = {"UpdateItem": METERS}
_SPENT = f"; the {METERS} meters before it (one parallel step)"
# A content write sends its meters with its upload: one step for both (docs/decisions.md).
_WITH_PUT = f"; the {METERS} meters sent with the S3 put (one step)"
_COMMIT = f"S3 put + one DynamoDB commit, the version record in it (+ the batch read){_WITH_PUT}"
_WRITE_OPS = {"BatchGetItem": 1, "PutObject": 1, "TransactWriteItems": 1, **_METERED}

# ---- fork: a conversation of 64 (and one of 8) documents of 1000 bytes, forked; each child is removed again,
# untimed, so the table (and moto's transaction cost, which grows with it) stays the same size for every call.
# 8 fit one transaction with their records; 64 pass DynamoDB's 100 items and take two.

FORK_VERB = "fork 64"
FORK_DOCS = 64
FORK_SMALL_DOCS = 8
FORK_DOC_BYTES = 1000
_fork_worlds: dict[tuple[int, int], tuple[str, str]] = {}


def _fork_parent(w: World, docs: int = FORK_DOCS) -> tuple[str, str]:
    """(workspace, conversation) of a parent of `docs` documents, built on first use (untimed)."""
    found = _fork_worlds.get((id(w), docs))
    if found is not None:
        return found
    ws = w.h.call(Step("POST", "/workspaces", w.token, {"workspace": {"name": f"fork {docs}"}}, expect=201))
    ws_id = ws["workspace"]["public_id"]
    out = w.h.call(Step("POST", f"/workspaces/{ws_id}/conversations", w.token, {"conversation": {}}, expect=201))
    conv = out["conversation"]["public_id"]
    for i in range(docs):
        content = (_markdown(f"fork {i}", 20) * 2)[:FORK_DOC_BYTES]
        body = _write_body(f"conversation/f-{i:02d}.md", content)
        w.h.call(Step("POST", f"/workspaces/{ws_id}/conversations/{conv}/memory", w.token, body, expect=201))
    _fork_worlds[(id(w), docs)] = (ws_id, conv)
    return ws_id, conv


def _forking(docs: int) -> tuple[Callable[[World, int], Step], Callable[[World, int, dict[str, Any]], None]]:
    """The fork of a `docs`-document parent, and the untimed removal of its child."""

    def fork(w: World, i: int) -> Step:
        ws_id, conv = _fork_parent(w, docs)
        return Step("POST", f"/workspaces/{ws_id}/conversations/{conv}/fork", w.token, expect=201)

    def unfork(w: World, i: int, out: dict[str, Any]) -> None:
        child = out["conversation"]["public_id"]
        anchor = f"ANCHOR#conversation#{child}"
        keys = [("CONV#" + child, "CONV"), (anchor, "#META"), (anchor, "FORKBASE")]
        keys += [(anchor, f"DOC#f-{k:02d}.md") for k in range(docs)]
        # And the child's history: one `fork` record per copy, at the parent's lock_version (0)
        keys += [store_keys.version(Anchor("conversation", child), f"f-{k:02d}.md", 0) for k in range(docs)]
        ddb = aws_clients()[0]
        table = get_store().table
        for k in range(0, len(keys), 25):
            batch = [{"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"S": sk}}}} for pk, sk in keys[k : k + 25]]
            ddb.batch_write_item(RequestItems={table: batch})

    return fork, unfork


def worst_note() -> str:
    """What the worst-case rows are, in a sentence for the published page."""
    from agent_memory.domain.memory.service import GREP_BYTE_BUDGET, GREP_DEADLINE_SECONDS

    return (
        f"Grep's worst case: {GREP_ROOTS} bound roots x {GREP_DOCS} documents x {GREP_DOC_BYTES // 1024} KiB "
        f"({GREP_ROOTS * GREP_DOCS * GREP_DOC_BYTES // 2**20} MiB) searched with a regex that matches nothing, under "
        f"the {GREP_BYTE_BUDGET // 2**20} MiB byte budget and the {GREP_DEADLINE_SECONDS:g} s deadline; answers by "
        f"truncated_reason: {dict(sorted(GREP_REASONS.items()))}. The block's worst case: {len(_BLOCK_ROOTS)} roots "
        f"x {BLOCK_DOCS} documents of {BLOCK_DOC_BYTES} bytes assembled under a 16 KiB and a 1 MiB budget (cold: "
        "each included document's first S3 read)."
    )


def grep_worst_note(results: list[Result]) -> None:
    from agent_memory.domain.memory.service import GREP_BYTE_BUDGET, GREP_DEADLINE_SECONDS

    print(
        f"\nGrep's worst case ({GREP_ROOTS} roots x {GREP_DOCS} documents x {GREP_DOC_BYTES // 1024} KiB = "
        f"{GREP_ROOTS * GREP_DOCS * GREP_DOC_BYTES // 2**20} MiB; a {GREP_BYTE_BUDGET // 2**20} MiB byte budget and a "
        f"{GREP_DEADLINE_SECONDS:g} s deadline):"
    )
    for r in results:
        if r.verb.name == GREP_WORST:
            total = [ms(s.total_ns) for s in r.samples]
            gets = [s.ops.get("s3:GetObject", 0) for s in r.samples]
            print(
                f"  {r.label}: total p50 {pct(total, 50):.0f} ms, max {max(total):.0f} ms; "
                f"S3 GETs {min(gets)}-{max(gets)} per call"
            )
    print(f"  answers, by truncated_reason: {dict(GREP_REASONS)} (every one 200)")
    for pattern, whole, by_line in grep_cpu_per_mib():
        print(
            f"  regex CPU per MiB searched, {pattern!r}: whole documents {whole:.1f} ms, line by line {by_line:.1f} ms "
            f"({whole / by_line:.2f}x)"
        )


def fork_vs_copy(w: World, n: int) -> None:
    """What a fork that copied content would cost instead: read and write each of the 64 versions."""
    from concurrent.futures import ThreadPoolExecutor

    store = get_store()
    _, conv = _fork_parent(w)
    docs = store.list_documents(Anchor("conversation", conv))
    samples: list[float] = []
    with ThreadPoolExecutor(max_workers=16) as pool:
        for k in range(n):
            CACHE.clear()
            start = time.perf_counter_ns()

            def copy(d: Any, k: int = k) -> int:
                text = store.read_content(d.held(d.rest))
                store.put_content(f"{d.content_key}-copy-{k}", text)
                return len(text.encode())

            copied = sum(pool.map(copy, docs))
            samples.append(ms(time.perf_counter_ns() - start))
    print(
        f"\nFork vs copying the content ({len(docs)} documents, {copied} bytes): a copy-on-write fork reads and "
        f"writes 0 S3 bytes in 5 DynamoDB requests; copying instead takes {2 * len(docs)} S3 requests "
        f"(get + put each, 16 in parallel) moving {2 * copied} bytes: p50 {pct(samples, 50):.2f} ms, "
        f"p99 {pct(samples, 99):.2f} ms over {n} runs, before writing any pointer row (compare '{FORK_VERB}' above)."
    )


# ---- typed records: append (new, mention), show, and search over 10,000 records seeded straight into the
# table (untimed: 10,000 appends through the handlers would take minutes).

SEARCHED_RECORDS = 10_000
# The same search over a tenth of the records, side by side: its cost must follow what it answers (issue 27).
SEARCHED_FEW = 1_000
SEARCH_VERB, SEARCH_FEW_VERB = "record search 10k", "record search 1k"
# A curator's listing of what waits for review, over the same two workspaces, each holding the same few
# records waiting: its cost must follow what waits, not what is stored.
REVIEW_VERB, REVIEW_FEW_VERB = "record review 10k", "record review 1k"
PENDING_SEEDED = 20
SEARCH_SCALE_TARGET = 2.0  # 10k's CPU and read units at most this many times 1k's
_TOPICS = ("billing", "invoices", "reports", "deploys", "alerts", "schemas", "retries", "tenants", "exports")
_record_worlds: dict[tuple[int, int], str] = {}
_curators: dict[tuple[int, int], str] = {}  # a curator's token in each searched workspace
_mentioned: dict[int, str] = {}


def _records(w: World) -> str:
    return f"/workspaces/{w.ws}/records"


def _record_text(i: int) -> str:
    # Distinct words per call, so a new record's bands find no near-duplicate of it.
    from agent_memory.core.ids import uuid7

    tag = uuid7().replace("-", "")
    return (
        f"Decision {i} {tag[-12:]}: the {_TOPICS[i % len(_TOPICS)]} worker {tag[-20:-12]} retries at most {i % 7} times"
    )


def _record_append(w: World, i: int) -> Step:
    return Step("POST", _records(w), w.token, {"record": {"content": _record_text(i), "type": "decision"}}, expect=201)


def _record_mention(w: World, i: int) -> Step:
    body = {"record": {"content": "Invoice numbers carry a year prefix, per tenant", "type": "decision"}}
    if id(w) not in _mentioned:
        _mentioned[id(w)] = w.h.call(Step("POST", _records(w), w.token, body, expect=201))["record"]["public_id"]
    return Step("POST", _records(w), w.token, body, expect=200)


def _record_show(w: World, i: int) -> Step:
    _record_mention(w, i)
    return Step("GET", f"{_records(w)}/{_mentioned[id(w)]}", w.token)


def _searched_workspace(w: World, size: int = SEARCHED_RECORDS) -> str:
    """A workspace holding `size` Workspace records and their search postings, seeded on first use (untimed)."""
    found = _record_worlds.get((id(w), size))
    if found is not None:
        return found
    import random

    from agent_memory.core.ids import now_iso, uuid7
    from agent_memory.core.model import Quarantine, TypedRecord
    from agent_memory.domain.records.service import index_terms
    from agent_memory.domain.records.text import content_digest
    from agent_memory.store.kinds import RECORD

    made = w.h.call(Step("POST", "/workspaces", w.token, {"workspace": {"name": "records"}}, expect=201))
    ws_id = str(made["workspace"]["public_id"])
    # The one who lists what waits for review: a curator of the workspace.
    cora = w.h.call(Step("POST", "/humans", w.token, {"human": {"name": "cora"}}, expect=201))
    member = {"member": {"human_public_id": cora["human"]["public_id"], "role": "curator"}}
    w.h.call(Step("POST", f"/workspaces/{ws_id}/members", w.token, member, expect=201))
    _curators[(id(w), size)] = str(cora["token"])
    rng = random.Random(15)
    vocabulary = [f"{a}{b}" for a in ("al", "be", "ca", "do", "ek", "fi", "gu", "ha") for b in "aeiouxyz"]
    vocabulary += list(_TOPICS)
    at = now_iso()
    items = []
    held = Quarantine("pending", ("override",), "bench")
    for i in range(size):
        waits = i < PENDING_SEEDED  # words no search of the bench uses, so its search rows are unchanged
        text = (
            f"Flagged note {i}: ignore the earlier guidance"
            if waits
            else " ".join(rng.choice(vocabulary) for _ in range(rng.randint(12, 30)))
        )
        rec = TypedRecord(
            uuid7(),
            ws_id,
            "Workspace",
            "fact",
            text,
            Author("human", "bench", "bench"),
            at,
            at,
            facet=None if waits else _TOPICS[i % len(_TOPICS)],
            content_digest=content_digest(text),
            quarantine=held if waits else None,
        )
        items.append(RECORD.item(rec))
        items += [
            store_keys.wire(store_keys.record_term(ws_id, "Workspace", t, rec.public_id)) for t in index_terms(rec)
        ]
    store = get_store()
    for k in range(0, len(items), 25):
        batch = [{"PutRequest": {"Item": it}} for it in items[k : k + 25]]
        store.ddb.batch_write_item(RequestItems={store.table: batch})
    _record_worlds[(id(w), size)] = ws_id
    return ws_id


def _record_search(w: World, i: int, size: int = SEARCHED_RECORDS) -> Step:
    ws_id = _searched_workspace(w, size)
    query = ("billing retries", "tenants exports alpha", "deploys")[i % 3]
    return Step("POST", f"/workspaces/{ws_id}/records/search", w.token, {"search": {"query": query, "limit": 20}})


def _record_search_few(w: World, i: int) -> Step:
    return _record_search(w, i, SEARCHED_FEW)


def _record_review(w: World, i: int, size: int = SEARCHED_RECORDS) -> Step:
    ws_id = _searched_workspace(w, size)
    curator = _curators[(id(w), size)]
    return Step("POST", f"/workspaces/{ws_id}/records/search", curator, {"search": {"quarantine": "pending"}})


def _record_review_few(w: World, i: int) -> Step:
    return _record_review(w, i, SEARCHED_FEW)


def search_scale_note(results: list[Result]) -> bool:
    """The 10k search beside the 1k one, and the 10k review listing beside the 1k one: handler CPU (own and
    botocore's) and billed read units, and the ratios the issue's bar is judged on."""
    ok = True
    for big, few in ((SEARCH_VERB, SEARCH_FEW_VERB), (REVIEW_VERB, REVIEW_FEW_VERB)):
        ok &= _scale_note(results, big, few)
    return ok


def _scale_note(results: list[Result], big_label: str, few_label: str) -> bool:
    rows = {r.label: r for r in results if r.label in (big_label, few_label)}
    if len(rows) < 2:
        return True

    def figures(r: Result) -> tuple[float, float, float]:
        own = pct([ms(s.own_cpu_ns) for s in r.samples], 50)
        sdk = pct([ms(s.aws_cpu_ns) for s in r.samples], 50)
        return own, sdk, sum(u.rru for u in r.usages) / max(1, len(r.usages))

    big, few = figures(rows[big_label]), figures(rows[few_label])
    ratios = [b / f if f else math.inf for b, f in zip(big, few, strict=True)]
    cpu = (big[0] + big[1]) / (few[0] + few[1]) if few[0] + few[1] else math.inf
    ok = max(cpu, ratios[2]) <= SEARCH_SCALE_TARGET
    what = big_label.rsplit(" ", 1)[0].capitalize()
    print(f"\n{what}, {SEARCHED_RECORDS:,} records beside {SEARCHED_FEW:,} (p50; read units per call):")
    print(f"{'':<20} {'own cpu ms':>10} {'sdk cpu ms':>10} {'cpu ms':>8} {'rru':>8}")
    for label, (own, sdk, rru) in ((big_label, big), (few_label, few)):
        print(f"{label:<20} {own:>10.3f} {sdk:>10.3f} {own + sdk:>8.3f} {rru:>8.2f}")
    print(
        f"{'ratio':<20} {ratios[0]:>9.2f}x {ratios[1]:>9.2f}x {cpu:>7.2f}x {ratios[2]:>7.2f}x  "
        f"(target at most {SEARCH_SCALE_TARGET:g}x for cpu and rru: {'yes' if ok else 'NO'})"
    )
    return ok


# The bench's queries have at most 3 words: a Query of each word's 256 best-weighted postings, then the records
# they name in batches of 100 (both in parallel), then the page whole.
_SEARCH_TARGET = Target(
    2 + 3 + -(-3 * 256 // 100),
    0,
    "batch read + one Query per query word (at most 3 here, in parallel) + the records their postings name "
    "(at most 256 a word) in parallel batches of 100 + one batch read of the page's records",
    at_most=True,
    own_ms=50.0,
)

# A curator's listing of what waits (no query): the pending postings, then the records they name and the page.
_REVIEW_TARGET = Target(
    4,
    0,
    "batch read + one Query of the postings of what waits for review + one batch read of the records they "
    "name + one batch read of the page's records",
    ops={"BatchGetItem": 3, "Query": 1},
    own_ms=5.0,  # it selects, orders and renders a page of whole records
)

VERBS: list[Verb] = [
    Verb("list", Target(3, 0, "batch read + 1 Query per bound anchor (conversation, workspace)"), _list),
    Verb(
        "show", Target(1, 0, f"{_BATCH}; content cached"), _show, cold=Target(1, 1, f"{_BATCH} + S3 get (cache empty)")
    ),
    Verb("write (create)", Target(2 + METERS, 1, _COMMIT, ops=_WRITE_OPS), _create, _uncreate),
    Verb(
        "write (replace)",
        Target(2 + METERS, 1, _COMMIT, ops=_WRITE_OPS),
        _replace,
        lambda w, i, out: w.remember(out),
    ),
    Verb("edit", Target(2 + METERS, 1, f"{_COMMIT}; old content cached", ops=_WRITE_OPS), _edit, _edited),
    Verb(
        "grep (regex)",
        Target(3, 0, "as list; contents cached"),
        _grep,
        cold=Target(
            3,
            12,
            "as list + one S3 get per document, 12 (cache empty); fewer when the limit (100) stops the walk first",
            at_most=True,
        ),
    ),
    Verb("grep (literal)", Target(3, 0, "as list; contents cached"), _grep_literal),
    Verb(GREP_WORST, _grep_worst_target(False), _grep_worst, _grep_worst_answered, cold=_grep_worst_target(True)),
    Verb(
        "delete",
        Target(
            2 + METERS,
            0,
            f"one DynamoDB commit (+ the batch read){_SPENT}",
            ops={"BatchGetItem": 1, "TransactWriteItems": 1, **_METERED},
        ),
        _delete,
    ),
    Verb("show_conversation", Target(1, 0, "one BatchGetItem"), _show_conversation),
    Verb(
        "memory file show",
        Target(1, 0, "one BatchGetItem: token+Memory+file; content cached", ops={"BatchGetItem": 1}),
        _file_show,
        cold=Target(1, 1, "one BatchGetItem + S3 get (cache empty)", ops={"BatchGetItem": 1, "GetObject": 1}),
    ),
    Verb(
        "memory file write",
        Target(
            2 + METERS,
            1,
            f"S3 put + one commit (the counter row and the lease check ride in it){_WITH_PUT}",
            ops=_WRITE_OPS,
        ),
        _file_write,
        _file_written,
    ),
    Verb(
        "memory file write (mounted)",
        Target(
            2 + METERS,
            1,
            "S3 put + one commit; one BatchGetItem: token+standing+the mounted Memory and its file (the warm "
            f"function knows the execution, so the mount){_WITH_PUT}",
            ops=_WRITE_OPS,
        ),
        _mounted_write,
        _file_written,
    ),
    Verb(
        "workspace show",
        Target(1, 0, "one BatchGetItem: token+workspace+member+document"),
        _ws_show,
        cold=Target(1, 1, "one BatchGetItem + S3 get (cache empty)"),
    ),
    Verb(
        f"fork {FORK_SMALL_DOCS}",
        Target(
            4 + METERS,
            0,
            f"batch read + mark the parent forked + one Query (parent rows) + one transaction (child, "
            f"{FORK_SMALL_DOCS} copies, their `fork` records){_SPENT}; 0 S3",
            ops={"BatchGetItem": 1, "UpdateItem": 1 + METERS, "Query": 1, "TransactWriteItems": 1},
        ),
        *_forking(FORK_SMALL_DOCS),
    ),
    Verb(
        FORK_VERB,
        Target(
            5 + METERS,
            0,
            "batch read + mark the parent forked + one Query (parent rows) + 2 transactions, past 100 items "
            f"(64 `fork` records; child + 64 copies){_SPENT}; 0 S3",
            ops={"BatchGetItem": 1, "UpdateItem": 1 + METERS, "Query": 1, "TransactWriteItems": 2},
        ),
        *_forking(FORK_DOCS),
    ),
    Verb(
        "versions",
        Target(2, 0, "batch read + one Query", ops={"BatchGetItem": 1, "Query": 1}),
        _versions,
    ),
    Verb(
        "versions/show",
        Target(1, 0, "one BatchGetItem (the record rides in it); content cached", ops={"BatchGetItem": 1}),
        _version_show,
        cold=Target(1, 1, "one BatchGetItem + S3 get (cache empty)", ops={"BatchGetItem": 1, "GetObject": 1}),
    ),
    Verb(
        "rollback",
        Target(
            2 + METERS,
            0,
            f"batch read (+ the source record) + one commit{_SPENT}; no S3 put; source content cached",
            ops={"BatchGetItem": 1, "TransactWriteItems": 1, **_METERED},
        ),
        _rollback,
        lambda w, i, out: w.remember(out),
        cold=Target(
            2 + METERS,
            1,
            "as warm + S3 get of the source's text (cache empty)",
            ops={"BatchGetItem": 1, "TransactWriteItems": 1, "GetObject": 1, **_METERED},
        ),
    ),
    Verb(
        "redaction",
        Target(
            3 + METERS,
            1,
            f"batch read + one commit + one Query (other holders) + S3 delete{_SPENT}",
            ops={"BatchGetItem": 1, "TransactWriteItems": 1, "Query": 1, "DeleteObject": 1, **_METERED},
        ),
        _redact,
    ),
    Verb(
        "promote (conversation)",
        Target(
            2 + METERS,
            1,
            "one batch read (source's door and record, the target's workspace and row) + S3 put + one commit"
            f"{_WITH_PUT}; source content cached",
            ops={"BatchGetItem": 1, "PutObject": 1, "TransactWriteItems": 1, **_METERED},
        ),
        _promote_from_conversation,
        lambda w, i, out: w.remember(out),
        cold=Target(2 + METERS, 2, "as warm + S3 get of the source's text (cache empty)"),
    ),
    Verb(
        "promote (workspace)",
        Target(
            2 + METERS,
            1,
            f"one batch read (source and target) + S3 put + one commit{_WITH_PUT}; source content cached",
            ops={"BatchGetItem": 1, "PutObject": 1, "TransactWriteItems": 1, **_METERED},
        ),
        _promote_within_workspace,
        lambda w, i, out: w.remember(out),
    ),
    Verb(
        "record append",
        Target(
            3 + METERS,
            0,
            "batch read (token, workspace, member, the claim, 8 band items) + candidates' batch read when a band "
            "names any + one commit (record, claim, 8 bands, a search posting per distinct word, at most 40); "
            f"the {METERS} meters sent with the candidates' read (before the commit when there is none)",
            at_most=True,
        ),
        _record_append,
    ),
    Verb(
        "record append (mention)",
        Target(
            3 + METERS,
            0,
            f"batch read + the claimed record's read, the {METERS} meters sent with it (one step) + one UpdateItem "
            "of its mention_count",
            ops={"BatchGetItem": 1, "GetItem": 1, "UpdateItem": 1 + METERS},
        ),
        _record_mention,
    ),
    Verb("record show", Target(1, 0, "one BatchGetItem (token, workspace, member, both layers' keys)"), _record_show),
    Verb(SEARCH_VERB, _SEARCH_TARGET, _record_search),
    Verb(SEARCH_FEW_VERB, _SEARCH_TARGET, _record_search_few),
    Verb(REVIEW_VERB, _REVIEW_TARGET, _record_review),
    Verb(REVIEW_FEW_VERB, _REVIEW_TARGET, _record_review_few),
    Verb(
        "memory_block 4x64 16K",
        Target(6, 0, f"{_BLOCK_READ}; contents cached"),
        _memory_block(_BLOCK_SMALL),
        cold=Target(6, _block_included(_BLOCK_SMALL), "as warm + one parallel S3 get per included document only"),
    ),
    Verb(
        "memory_block 4x64 1M",
        Target(6, 0, f"{_BLOCK_READ}; contents cached"),
        _memory_block(_BLOCK_WHOLE),
        cold=Target(6, _block_included(_BLOCK_WHOLE), "as warm + 256 parallel S3 gets (every document fits)"),
    ),
]


# ---- running and reporting -------------------------------------------------------------------------


@dataclass
class Result:
    verb: Verb
    label: str
    target: Target
    samples: list[Sample]
    seconds: float  # the row's whole cost: setting the stage, warm-up and measuring
    function: str = ""  # the functions/<name>/ folder whose Lambda answers it
    usages: list[Usage] = field(default_factory=list)  # billed units, from a few untimed calls of its own


def usage_of(w: World, verb: Verb, n: int, *, cold: bool, base: int) -> tuple[str, list[Usage]]:
    """(the verb's function, the billed units of n more calls), each worked out in its own untimed call."""
    usages, function = [], ""
    for k in range(n):
        step = verb.prepare(w, base + k)
        function = w.h.function_of(step)
        if cold:
            CACHE.clear()
        usage, out = w.h.usage(step)
        if verb.after is not None:
            verb.after(w, base + k, out)
        usages.append(usage)
    return function, usages


def run_verb(
    w: World, verb: Verb, warmup: int, n: int, *, cold: bool, base: int, budget: float = math.inf, floor: int = MIN_N
) -> list[Sample]:
    """Warm-up calls, then up to n measured ones. Each phase stops early once its time is spent (half the
    budget for the warm-up, at least 2 calls; the budget for measuring, at least `floor`), so a loaded
    machine or a heavy verb cannot stretch the run much past its two minutes."""

    def once(i: int) -> Sample:
        step = verb.prepare(w, i)
        if cold:
            CACHE.clear()
        sample, out = w.h.measure(step)
        if verb.after is not None:
            verb.after(w, i, out)
        return sample

    stop = time.monotonic() + budget / 2
    for k in range(warmup):
        if k >= 2 and time.monotonic() > stop:
            break
        once(base + k)
    samples: list[Sample] = []
    stop = time.monotonic() + budget
    for k in range(warmup, warmup + n):
        if len(samples) >= min(floor, n) and time.monotonic() > stop:
            break
        samples.append(once(base + k))
    return samples


def ms(ns: float) -> float:
    return ns / 1e6


def ops_text(samples: list[Sample]) -> tuple[str, float, float]:
    """'BatchGetItem 1, Query 2' per call (with a range when calls differ), plus mean DynamoDB and S3 counts."""
    names = sorted({op for s in samples for op in s.ops})
    parts = []
    for op in names:
        counts = [s.ops.get(op, 0) for s in samples]
        lo, hi = min(counts), max(counts)
        parts.append(f"{op.split(':')[1]} {lo}" if lo == hi else f"{op.split(':')[1]} {lo}-{hi}")
    ddb = sum(c for s in samples for op, c in s.ops.items() if op.startswith("dynamodb:")) / len(samples)
    s3 = sum(c for s in samples for op, c in s.ops.items() if op.startswith("s3:")) / len(samples)
    return ", ".join(parts) or "none", ddb, s3


def report(results: list[Result], args: argparse.Namespace) -> bool:
    out = sys.stdout
    print("\nAWS requests per call, mean (S3 and DynamoDB counted with botocore event hooks)", file=out)
    print(f"{'verb':<24} {'ddb':>4} {'s3':>4}  {'by operation':<48} {'target':>6}  {'ok':<3} why", file=out)
    all_ok = True
    for r in results:
        text, ddb, s3 = ops_text(r.samples)
        ok = r.target.met(r.samples)
        all_ok &= ok
        tgt = f"{r.target.dynamodb}+{r.target.s3}"
        print(
            f"{r.label:<24} {ddb:>4g} {s3:>4g}  {text:<48} {tgt:>6}  {'yes' if ok else 'NO':<3} {r.target.note}",
            file=out,
        )

    cpu = args.storage == "process"  # with moto in this process, its CPU would count as ours
    judged = "own cpu" if cpu else "own"
    print(
        f"\nHandler time in ms, over n calls after {args.warmup} warm-up calls. total = the handler's wall time; "
        "own = total minus the time inside AWS calls.\nown cpu = this process's CPU time minus botocore's: what "
        "the handler itself computes, steady under machine load (the target is judged on it);\nsdk cpu = "
        "botocore's own CPU inside the calls (build, sign, parse, connect), which Lambda pays too.",
        file=out,
    )
    print(
        f"{'verb':<24} {'n':>4} {'total p50':>9} {'total p99':>9} {'own p50':>8} {'own p99':>8} {'own/total':>9} "
        f"{'own cpu p50':>11} {'sdk cpu p50':>11} {'sdk/own':>7}  {judged}<{OWN_TARGET_MS:g}ms* row secs",
        file=out,
    )
    for r in results:
        total = [ms(s.total_ns) for s in r.samples]
        own = [ms(s.own_ns) for s in r.samples]
        own50, total50 = pct(own, 50), pct(total, 50)
        own_cpu50 = pct([ms(s.own_cpu_ns) for s in r.samples], 50)
        own_cpu = f"{own_cpu50:>11.3f}" if cpu else f"{'-':>11}"
        sdk50 = pct([ms(s.aws_cpu_ns) for s in r.samples], 50)
        sdk_cpu = f"{sdk50:>11.3f}" if cpu else f"{'-':>11}"
        sdk_own = f"{sdk50 / own_cpu50:>7.1f}" if cpu and own_cpu50 > 0 else f"{'-':>7}"
        fast = (own_cpu50 if cpu else own50) < r.target.own_ms
        all_ok &= fast
        print(
            f"{r.label:<24} {len(r.samples):>4} {total50:>9.2f} {pct(total, 99):>9.2f} {own50:>8.3f} "
            f"{pct(own, 99):>8.3f} {own50 / total50:>9.1%} {own_cpu} {sdk_cpu} {sdk_own}  "
            f"{'yes' if fast else 'NO':<{len(judged) + 6}}{r.seconds:>9.1f}",
            file=out,
        )
    print(f"* or the row's own target: {', '.join(_own_targets(results)) or 'none'}", file=out)
    return all_ok


def model_table(results: list[Result]) -> None:
    """The latency model's figures for this run's rows, as the page would publish them: a run of a few verbs
    (`--only`) publishes nothing, and this is where it shows what the model makes of its request graphs."""
    memory = perfdoc._template_memory()
    print("\nLatency model (tests/perfdoc.py) from this run's request graphs and CPU:")
    print(f"{'verb':<24} {'depth':>5} {'p50 ms':>8} {'p95 ms':>8}  request graph")
    for r in results:
        row = published_row(r, memory)
        p50, p95 = perfdoc.predicted_ms(row)
        graph = perfdoc._graph(row["graph"])
        print(f"{r.label:<24} {perfdoc.depth(row['graph']):>5} {p50:>8.1f} {p95:>8.1f}  {graph}")


def published_row(r: Result, memory_mb: dict[str, int]) -> dict[str, Any]:
    """One row of docs/performance.json: what the page and its models are rendered from."""
    text, ddb, s3 = ops_text(r.samples)
    graphs = Counter(json.dumps(request_graph(s.spans)) for s in r.samples)
    own = [ms(s.own_cpu_ns) for s in r.samples]
    sdk = [ms(s.aws_cpu_ns) for s in r.samples]
    total = [ms(s.total_ns) for s in r.samples]
    gets = [s.ops.get("s3:GetObject", 0) for s in r.samples]
    n = max(1, len(r.usages))
    return {
        "label": r.label,
        "function": r.function,
        "memory_mb": memory_mb[r.function],
        "n": len(r.samples),
        "ddb": round(ddb, 2),
        "s3": round(s3, 2),
        "ops_text": text,
        "graph": json.loads(graphs.most_common(1)[0][0]),
        "target_met": r.target.met(r.samples),
        "own_cpu_p50": round(pct(own, 50), 3),
        "own_cpu_p95": round(pct(own, 95), 3),
        "own_cpu_p99": round(pct(own, 99), 3),
        "sdk_cpu_p50": round(pct(sdk, 50), 3),
        "sdk_cpu_p95": round(pct(sdk, 95), 3),
        "sdk_cpu_p99": round(pct(sdk, 99), 3),
        "total_p50": round(pct(total, 50), 2),
        "total_max": round(max(total), 2),
        "s3_get_range": f"{min(gets)}" if min(gets) == max(gets) else f"{min(gets)}-{max(gets)}",
        "rru": round(sum(u.rru for u in r.usages) / n, 2),
        "wru": round(sum(u.wru for u in r.usages) / n, 2),
        # S3 requests from the timed calls themselves: the units pass's side reads slow a call enough that
        # grep's deadline can stop it before its S3 reads
        "s3_put": round(sum(s3_requests(s.ops)[0] for s in r.samples) / len(r.samples), 2),
        "s3_get": round(sum(s3_requests(s.ops)[1] for s in r.samples) / len(r.samples), 2),
    }


def _own_targets(results: list[Result]) -> list[str]:
    return sorted({f"{r.label} <{r.target.own_ms:g}ms" for r in results if r.target.own_ms != OWN_TARGET_MS})


def machine_note(args: argparse.Namespace) -> str:
    impl = platform.python_implementation()
    where = (
        "in a child process (--storage process)"
        if args.storage == "process"
        else "in this process (--storage thread: its work competes for the GIL and can inflate 'own')"
    )
    return (
        f"agent-memory bench: {impl} {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {args.warmup} warm-up + up to {args.n} "
        f"measured calls per verb, {args.budget:g} s of measuring each at most{' (--quick)' if args.quick else ''}.\n"
        f"Storage is the local service's serialised moto server on loopback, {where}: its latency is "
        "in 'total' but not in 'own'.\nHandlers are the functions' real Lambda handlers called in-process with "
        "HTTP API v2 events (no HTTP server); log level "
        f"{os.environ.get('POWERTOOLS_LOG_LEVEL')}. Cold rows empty the content cache only, not the container.\n"
        "moto's server closes every connection, so each AWS call here also pays a TCP connect (in 'sdk cpu' and "
        "'total') that a warm Lambda's keep-alive pool would not; reading an S3 body happens after botocore "
        "returns, so it counts as 'own' in cold rows."
    )


def profile(w: World, verb: Verb, n: int, base: int) -> None:
    """cProfile the handler calls of one verb (this thread only: the store's pool threads are not seen)."""
    prof = cProfile.Profile()
    for k in range(n):
        step = verb.prepare(w, base + k)
        handler, event = w.h.event(step)
        prof.enable()
        result = handler(event, None)
        prof.disable()
        if verb.after is not None:
            verb.after(w, base + k, _checked(step, result))
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(25)
    print(f"\ncProfile of {verb.name!r} over {n} calls (AWS calls included; see tottime for our own code)")
    print(buf.getvalue())


COLD_TARGET = 2.0  # a route's process start to first answer, at most this many bare `import boto3` processes
COLD_RUNS, COLD_FEW_RUNS = 7, 3


def cold_start_table(
    service: LocalService, which: str, functions: set[str] | None = None
) -> tuple[bool, dict[str, Any]]:
    """Process start to first successful answer for every function (tests/coldstart.py, the calls of
    tests/coldcases.py), beside a bare `import boto3`.

    `all`: the representative set (each handler module's first route, and every function a verb of this
    bench calls) gets COLD_RUNS runs, the rest COLD_FEW_RUNS (the whole table in minutes on 2 cores);
    `some` (--quick): the representative set alone, COLD_FEW_RUNS runs. `functions` narrows the table
    (--cold-only)."""
    from agent_memory.api.contract import BY_NAME

    from . import coldcases

    names = [n for n in coldstart.functions() if n != "sweeper"]  # a scheduled job, not a route
    firsts: dict[str, str] = {}
    for name in names:
        route = BY_NAME.get(name)
        firsts.setdefault(route.handler.partition(":")[0] if route else name, name)
    representative = set(firsts.values()) | (set(_COLD_VERBS) & set(names))
    if which == "some":
        runs = dict.fromkeys(representative, COLD_FEW_RUNS)
    else:
        runs = {n: COLD_RUNS if n in representative else COLD_FEW_RUNS for n in names}
    if functions:
        runs = {n: COLD_RUNS for n in names if n in functions}
    # A world of its own per function: a grep, a block, an export or a fork reads every document of its door,
    # and in a shared world that would be whatever the functions measured before it happened to write.
    events = {n: coldcases.event_maker(service, coldcases.staged_world(service), n) for n in runs}
    expected = {n: coldcases.expected_status(n) for n in runs}
    coldstart.compile_layer()
    boto3_ms, rows = coldstart.end_to_end(events, expected, runs, report=progress)
    ok = coldstart.print_end_to_end(boto3_ms, rows, COLD_TARGET)
    published = {
        "boto3_ms": round(boto3_ms, 1),
        "runs": COLD_FEW_RUNS if which == "some" else COLD_RUNS,
        "few_runs": COLD_FEW_RUNS,
        "target": COLD_TARGET,
        "which": which,
        "rows": [
            {
                "function": r.function,
                "runs": r.runs,
                "process_ms": round(r.process_ms, 1),
                "import_ms": round(r.import_ms, 1),
                "first_ms": round(r.first_ms, 1),
                "status": r.statuses[0],
                "succeeded": r.succeeded,
            }
            for r in rows
        ],
    }
    return ok, published


# The functions of this bench's busiest verbs join the representative set.
_COLD_VERBS = (
    "conversation_memory_show",
    "conversation_memory_list",
    "conversation_memory_write",
    "conversation_memory_grep",
    "conversation_memory_delete",
    "conversation_memory_block",
    "fork_conversation",
    "memory_file_show",
    "record_show",
    "records_search",
)


def first_call(w: World, verb: Verb, base: int) -> coldstart.FirstCall:
    """A fresh process answers the verb's call once, then once more (tests/coldstart.py). Run right after
    the verb's warm rows, so the second call meets the same storage its warm figure did: moto's
    transactions and queries slow down as the bench's later worlds fill the table."""
    first = verb.prepare(w, base)
    fresh = coldstart.FreshProcess(w.h.function_of(first))
    try:
        answers = []
        for j, step in ((base, first), (base + 1, None)):
            step = step or verb.prepare(w, j)
            got = fresh.call(w.h.event(step)[1])
            out = _checked(step, got["out"])
            if verb.after is not None:
                verb.after(w, j, out)
            answers.append(got)
    finally:
        fresh.close()
    (one, two), started = answers, fresh.started
    return coldstart.FirstCall(
        verb.name,
        fresh.function,
        started["import_ms"],
        one["ms"],
        one["cpu_ms"],
        two["ms"],
        two["modules"],
    )


def first_calls_table(rows: list[coldstart.FirstCall], results: list[Result]) -> list[dict[str, Any]]:
    """One row per verb the page lists. A fresh process starts with an empty content cache, so its first call
    is also the "(cold)" row's first request: that row repeats it beside the cold row's own warm figure (its
    second call would read the cache the first filled, so it has none)."""
    warm = {r.label: pct([ms(s.total_ns) for s in r.samples], 50) for r in results}
    coldstart.print_first_calls(rows, warm)
    out: list[dict[str, Any]] = []
    for r in rows:
        for label, second in ((r.verb, r.second_ms), (f"{r.verb} (cold)", None)):
            if label != r.verb and label not in warm:
                continue
            out.append(
                {
                    "verb": label,
                    "function": r.function,
                    "import_ms": round(r.import_ms, 1),
                    "first_ms": round(r.first_ms, 1),
                    "second_ms": None if second is None else round(second, 1),
                    "warm_ms": None if warm.get(label) is None else round(warm[label], 2),
                }
            )
    return out


# ---- storage scale: a write's cost with 1,000 items stored and with 100,000 -------------------------

SCALE_SIZES = (1_000, 100_000)
SCALE_TARGET = 1.2  # the 100,000-item p50 over the 1,000-item p50, at most
SCALE_VERB = "write (replace)"
FILLER = "FILLER#"


def _table_size() -> int:
    import boto3

    ddb = boto3.client("dynamodb")
    total = 0
    kwargs: dict[str, Any] = {"TableName": os.environ["TABLE_NAME"], "Select": "COUNT"}
    while True:
        page = ddb.scan(**kwargs)
        total += page["Count"]
        if "LastEvaluatedKey" not in page:
            return total
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _resize_to(items: int, fillers: int, others: int) -> int:
    """Add or remove filler items (a partition each, about 300 bytes) until the table holds about `items`
    beside the `others` it holds already; returns how many fillers there are now. (Counting the table
    instead would scan 100,000 items each time.)"""
    from concurrent.futures import ThreadPoolExecutor

    import boto3

    ddb: Any = boto3.client("dynamodb")
    table = os.environ["TABLE_NAME"]
    want = max(0, items - others)
    pad = "x" * 256

    def key(k: int) -> dict[str, Any]:
        return {"pk": {"S": f"{FILLER}{k}"}, "sk": {"S": "FILLER"}}

    def batch(start: int) -> None:
        end = min(start + 25, max(want, fillers))
        if want > fillers:
            rows = [{"PutRequest": {"Item": {**key(k), "pad": {"S": pad}}}} for k in range(start, end)]
        else:
            rows = [{"DeleteRequest": {"Key": key(k)}} for k in range(start, end)]
        while rows:
            left = ddb.batch_write_item(RequestItems={table: rows}).get("UnprocessedItems", {})
            rows = left.get(table, [])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(batch, range(min(want, fillers), max(want, fillers), 25)))
    return want


def storage_scale(service: LocalService, args: argparse.Namespace) -> dict[str, Any]:
    """A conditional write's p50 through its handler with 1,000 items stored and with 100,000, in one run on
    one storage: the local storage's writes must cost what they touch, not what the table holds. The full
    run goes 1,000 -> 100,000 -> 1,000 -> 100,000 and pools each size's calls, so a noisy minute on a shared
    machine does not land on one size only."""
    _empty_storage(service)
    world = World(Harness(service)).build()
    (verb,) = [v for v in VERBS if v.name == SCALE_VERB]
    pooled: dict[int, list[float]] = {size: [] for size in SCALE_SIZES}
    base = fillers = 0
    # The world's own items; its writes add a version each, which its document's retention bounds.
    others = _table_size()
    for size in SCALE_SIZES * (1 if args.quick else 2):
        t0 = time.monotonic()
        fillers = _resize_to(size, fillers, others)
        resized = time.monotonic() - t0
        samples = run_verb(world, verb, args.warmup, args.n, cold=False, base=base, budget=args.budget * 2)
        base += args.warmup + args.n
        pooled[size] += [ms(s.total_ns) for s in samples]
        progress(
            f"storage scale: {SCALE_VERB} with {size:,} items: p50 {pct(pooled[size][-len(samples) :], 50):.2f} ms "
            f"(n={len(samples)}; resized in {resized:.1f} s)"
        )
    rows = [{"items": size, "n": len(pooled[size]), "p50_ms": round(pct(pooled[size], 50), 2)} for size in SCALE_SIZES]
    ratio = rows[-1]["p50_ms"] / rows[0]["p50_ms"]
    ok = ratio <= SCALE_TARGET
    progress(f"storage scale: {ratio:.2f}x (target at most {SCALE_TARGET}x) {'yes' if ok else 'NO'}")
    return {"verb": SCALE_VERB, "rows": rows, "ratio": round(ratio, 3), "target": SCALE_TARGET, "ok": ok}


def _empty_storage(service: LocalService) -> None:
    import urllib.request

    if service.moto is not None:
        service.reset()
        return
    reset = f"{os.environ['AWS_ENDPOINT_URL']}/moto-api/reset"
    urllib.request.urlopen(urllib.request.Request(reset, method="POST")).read()
    CACHE.clear()
    service.create_resources()


def progress(line: str) -> None:
    """A line as the run goes (the tables come at the end), with the time since the bench started."""
    print(f"[{time.perf_counter() - STARTED:6.1f} s] {line}", flush=True)


STARTED = time.perf_counter()


USAGE_CALLS = 3  # untimed calls per row whose billed units are worked out (the cost model's input)
# --quick works out one: the side reads that size a 10,000-record search take seconds per call locally.
QUICK_USAGE_CALLS = 1
LOAD_CLIENTS, LOAD_SECONDS, LOAD_MAX_REQUESTS = 8, 20.0, 20_000
LOAD_SWEEP = (1, 2, 4)  # clients of the shorter runs before the main one (a quarter of its time each)


def load_run(service: LocalService, args: argparse.Namespace) -> dict[str, Any]:
    """The load run (tests/loadrun.py) through the local HTTP gateway of the same service, on emptied
    storage, so its invariants count only what it made (the verbs' worlds hold 10,000 records and 64 MiB of
    grep documents by then). Shorter runs with fewer clients come first: the chart's latency against clients."""
    from .loadrun import run_load

    seconds = LOAD_SECONDS / 4 if args.quick else LOAD_SECONDS
    sweep = []
    for clients in (*LOAD_SWEEP, LOAD_CLIENTS):
        _empty_storage(service)
        report = run_load(
            service.url,
            clients=clients,
            seconds=seconds if clients == LOAD_CLIENTS else seconds / 4,
            max_requests=LOAD_MAX_REQUESTS,
            operator_key=service.operator_key,
        )
        point = report.to_dict()
        sweep.append(
            {k: point[k] for k in ("clients", "seconds", "requests", "throughput_rps", "p50_ms", "p95_ms", "p99_ms")}
        )
        progress(f"load run, {clients} clients: p50 {point['p50_ms']:.1f} ms, p95 {point['p95_ms']:.1f} ms")
    data: dict[str, Any] = report.to_dict()
    data["ok"] = report.ok
    data["max_requests"] = LOAD_MAX_REQUESTS
    data["sweep"] = sweep
    print(f"\nLoad run: {json.dumps(data)[:2000]}")
    return data


_MOTO_CHILD = """
import sys
from agent_memory_sdk.local.moto_backend import EmbeddedMoto
moto = EmbeddedMoto().start()
print(moto.url, flush=True)
sys.stdin.read()
"""


def moto_process() -> tuple[subprocess.Popen[str], str]:
    """The local service's serialised moto in a child process, so its work never holds our GIL."""
    child = subprocess.Popen(
        [sys.executable, "-c", _MOTO_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    url = child.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        child.kill()
        raise RuntimeError(f"moto child did not start: {url!r}")
    return child, url


def stop_child(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()  # its cue to exit
    try:
        child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()  # still busy with a request the bench no longer waits for
        child.wait()


# Each meter's limit in the bench: a budget no bench run reaches (see isolate_environment).
BENCH_WRITES_PER_MINUTE = 10_000_000


def isolate_environment() -> None:
    # The bench only ever talks to its own embedded moto: never to an endpoint or account from the shell.
    os.environ.pop("AWS_ENDPOINT_URL", None)
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    os.environ["AWS_ACCESS_KEY_ID"] = "testing"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"  # moto's placeholder
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    # The write budgets stay on, so every figure pays the meters a deployment with the shipped limits pays:
    # the same requests and the same items (a limit is only a number in the meter's condition). Only the
    # limits are raised, far past what one bench caller sends (hundreds of changes a minute from one
    # principal, account and address, the load run too), so no meter ever refuses: the figures would
    # measure the rate limiter instead.
    for budget in ("", "ACCOUNT_", "ORIGIN_"):
        os.environ[f"AGENT_MEMORY_{budget}WRITES_PER_MINUTE"] = str(BENCH_WRITES_PER_MINUTE)
    # A 10,000-record search sends Queries that serialised moto answers in seconds (AWS: tens of ms).
    os.environ["AGENT_MEMORY_AWS_READ_TIMEOUT"] = "60"
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    # The cold-start table syncs a Memory from a file:// repository of its own (tests/coldcases.py).
    os.environ["AGENT_MEMORY_GIT_FILE_ROOTS"] = tempfile.mkdtemp(prefix="bench-git-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    parser.add_argument("-n", type=int, default=None, help="measured calls per verb (default 200, quick 30)")
    parser.add_argument("--warmup", type=int, default=None, help="unmeasured calls first (default 20, quick 5)")
    parser.add_argument("--only", default="", help="comma-separated verb names to run (default: all)")
    parser.add_argument("--profile", default="", help="also cProfile this verb and print the top costs")
    parser.add_argument(
        "--storage",
        choices=("process", "thread"),
        default="process",
        help="the serialised moto in a child process (default: its work cannot steal the "
        "handler's GIL and inflate 'own'), or in this process as `agent-memory serve` runs it",
    )
    parser.add_argument(
        "--imports",
        choices=("all", "some", "none"),
        default=None,
        help="the cold-import table: every function (default), one per handler module (default with --quick), or none",
    )
    parser.add_argument("--no-first-calls", action="store_true", help="skip the first-request-per-verb table")
    parser.add_argument("--no-load", action="store_true", help="skip the load run through the local gateway")
    parser.add_argument("--no-scale", action="store_true", help="skip the write at 1,000 and at 100,000 stored items")
    parser.add_argument(
        "--soak",
        action="store_true",
        help="run the full soak (100,000 writes, most of an hour); without it a full run publishes the soak "
        "figures docs/performance.json already holds (--quick runs a short soak)",
    )
    parser.add_argument("--no-soak", action="store_true", help="skip the soak run (RSS over accepted writes)")
    parser.add_argument(
        "--soak-from",
        metavar="FILE",
        help="publish the soak figures of a run made on its own (`python -m tests.soak --json FILE`) instead",
    )
    parser.add_argument(
        "--no-publish",
        action="store_true",
        help="do not rewrite docs/performance.json and .md (never rewritten when --only picks verbs)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help=f"seconds of measuring per verb before it stops at {MIN_N} or more calls (default 3, quick 1)",
    )
    parser.add_argument(
        "--cold-only",
        nargs="?",
        const="all",
        metavar="FUNCTIONS",
        help="run only the cold-start table, of every function or of these (comma-separated); publishes nothing",
    )
    args = parser.parse_args(argv)
    args.budget = args.budget or (1.0 if args.quick else 3.0)
    args.n = args.n or (30 if args.quick else 200)
    args.warmup = args.warmup if args.warmup is not None else (5 if args.quick else 20)
    args.imports = args.imports or ("some" if args.quick else "all")
    only = {v.strip() for v in args.only.split(",") if v.strip()}
    verbs = [v for v in VERBS if not only or v.name in only]
    if not verbs:
        parser.error(f"no verb matches --only; choose from: {', '.join(v.name for v in VERBS)}")

    isolate_environment()
    started = time.perf_counter()
    child = None
    peak: dict[str, float | None] = {}
    verdict = "stopped"
    usage_calls = QUICK_USAGE_CALLS if args.quick else USAGE_CALLS
    if args.storage == "process":
        # start_local then uses this endpoint as it would any existing moto or LocalStack.
        child, os.environ["AWS_ENDPOINT_URL"] = moto_process()
    service = start_local(port=0)
    try:
        if args.cold_only:
            picked = None if args.cold_only == "all" else set(args.cold_only.split(","))
            met, _ = cold_start_table(service, args.imports, picked)
            print("\nall targets met" if met else "\nSOME TARGETS MISSED (marked NO)")
            return 0
        world = World(Harness(service)).build()
        print(machine_note(args))
        results: list[Result] = []
        fresh_rows: list[coldstart.FirstCall] = []
        base = 0
        for verb in verbs:
            t0 = time.monotonic()
            samples = run_verb(world, verb, args.warmup, args.n, cold=False, base=base, budget=args.budget)
            seconds = time.monotonic() - t0
            base += args.warmup + args.n
            function, usages = usage_of(world, verb, usage_calls, cold=False, base=base)
            base += usage_calls
            results.append(Result(verb, verb.name, verb.target, samples, seconds, function, usages))
            if not args.no_first_calls:
                fresh_rows.append(first_call(world, verb, base))
                base += 2
            if verb.cold is not None:
                t0, cold_n = time.monotonic(), max(MIN_N, args.n // 10)
                samples = run_verb(world, verb, 0, cold_n, cold=True, base=base, budget=args.budget / 2, floor=3)
                seconds = time.monotonic() - t0
                base += cold_n
                function, usages = usage_of(world, verb, usage_calls, cold=True, base=base)
                base += usage_calls
                results.append(Result(verb, f"{verb.name} (cold)", verb.cold, samples, seconds, function, usages))
            progress(
                f"{verb.name}: p50 {pct([ms(s.total_ns) for s in results[-1].samples], 50):.2f} ms "
                f"(n={len(results[-1].samples)})"
            )
        ok = report(results, args)
        model_table(results)
        first = first_calls_table(fresh_rows, results) if fresh_rows else []
        if any(v.name == GREP_WORST for v in verbs):
            grep_worst_note(results)
        ok &= search_scale_note(results)
        if any(v.name == FORK_VERB for v in verbs):
            fork_vs_copy(world, MIN_N)  # a comparison: a handful of runs shows the order of magnitude
        if args.profile:
            chosen = [v for v in VERBS if v.name == args.profile]
            if not chosen:
                parser.error(f"--profile: no verb named {args.profile!r}")
            profile(world, chosen[0], args.n, base)
        cold: dict[str, Any] | None = None
        if args.imports != "none":
            progress("cold start end to end")
            # On emptied storage and a new small world: moto's reads slow down with the table, and by now it
            # holds the verbs' 10,000 records and 64 MiB of grep documents (AWS's would not slow down).
            _empty_storage(service)
            met, cold = cold_start_table(service, args.imports)
            ok &= met
        scale = None
        if not args.no_scale:
            scale = storage_scale(service, args)
            ok &= bool(scale["ok"])
        load = None
        if not args.no_load:
            progress("load run")
            load = load_run(service, args)
            ok &= bool(load["ok"])
        soak_data = None
        if args.soak_from:
            # A soak run on its own (`python -m tests.soak --json FILE`): 100,000 writes take half an hour.
            soak_data = json.loads(Path(args.soak_from).read_text())
            progress(f"soak: from {args.soak_from}: {soak_data['writes']:,} writes, final {soak_data['final_mb']} MiB")
            ok &= bool(soak_data["ok"])
        elif not args.no_soak and not args.quick and not args.soak and perfdoc.DATA.exists():
            # The soak takes most of an hour: a full run keeps the published figures unless --soak asks.
            soak_data = json.loads(perfdoc.DATA.read_text()).get("soak")
            progress("soak: the published figures kept (--soak runs it)")
        elif not args.no_soak:
            from . import soak

            soak_data = soak.bench_soak(quick=args.quick, report=progress)
            ok &= bool(soak_data["ok"])
        if not only and not args.no_publish:
            memory = perfdoc._template_memory()
            perfdoc.write(
                {
                    "run": {
                        "seconds": round(time.perf_counter() - started),
                        "peak_rss_mb": {
                            k: round(v)
                            for k, v in {
                                "bench": peak_rss_mb(os.getpid()),
                                "storage": peak_rss_mb(child.pid) if child is not None else None,
                            }.items()
                            if v is not None
                        },
                        "mode": "make bench --quick" if args.quick else "make bench",
                        "machine": f"{platform.python_implementation()} {platform.python_version()}, "
                        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
                        "date": time.strftime("%Y-%m-%d"),
                    },
                    "verbs": [published_row(r, memory) for r in results],
                    "cold_start": cold,
                    "first_calls": first,
                    "worst_note": worst_note(),
                    "load": load,
                    "scale": scale,
                    "soak": soak_data,
                }
            )
            print(f"\nwrote {perfdoc.PAGE.relative_to(perfdoc.ROOT)} and {perfdoc.DATA.relative_to(perfdoc.ROOT)}")
        verdict = "all targets met" if ok else "SOME TARGETS MISSED (marked NO)"
    finally:
        service.stop()
        if child is not None:
            peak["storage"] = peak_rss_mb(child.pid)
            stop_child(child)
    peak["bench"] = peak_rss_mb(os.getpid())
    peaks = ", ".join(f"{proc} {mb:.0f} MiB" for proc, mb in peak.items() if mb is not None)
    print(f"\n{verdict}; ran in {time.perf_counter() - started:.1f} s; peak memory (RSS): {peaks}")
    return 0


def peak_rss_mb(pid: int) -> float | None:
    """A process's peak resident set (VmHWM), in MiB; None where /proc does not say."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


if __name__ == "__main__":
    raise SystemExit(main())
