"""Run docs/guide.md against a real server: every request block is sent, every answer block is compared.

The guide's exchanges are fenced ```http blocks. A request block is a request line (`POST /agent_api/v1/...`),
headers, a blank line and a JSON body; the answer block after it is a status line (`HTTP/1.1 201 Created`),
a blank line and the JSON answer. In both:

- `{name}` stands for a value the guide met earlier: in a request it is replaced by that value; in an
  answer, a string that is exactly `"{name}"` binds the name on its first appearance (an id, a token) and
  must equal it after, and a `{name}` inside a longer string is replaced before comparing;
- `"<time>"` matches any timestamp, `"<id>"` any id the guide did not name, `"<any>"` anything.

Everything else must be equal: the same keys, the same values, the same list lengths. So the guide cannot
drift from the service: tests/http/test_guide.py runs it on every `make test`.

`python -m tests.guide --write` starts a throwaway server, runs the guide and rewrites every answer block
from what the service answered, keeping the placeholders the guide already had and turning known values
back into their names, timestamps into `<time>` and ids it never named into `<id>`.
"""

from __future__ import annotations

import argparse
import http
import json
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"
BLOCK = re.compile(r"^```http\n(.*?)\n```$", re.DOTALL | re.MULTILINE)
NAME = re.compile(r"\{([a-z][a-z0-9_]*)\}")
TIME_TEXT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"
TIME = re.compile(f"^{TIME_TEXT}$")
ID = re.compile(r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mem_[0-9a-f]{32}|am_[a-z]_\S+)$")
WILDCARDS = {"<any>", "<time>", "<id>"}


@dataclass
class Exchange:
    line: int  # the request block's first line in the guide, for messages
    method: str
    path: str
    headers: dict[str, str]
    body: str
    answer_span: tuple[int, int] | None  # where the answer block's text sits in the guide
    status: int | None = None
    expected: Any = None


@dataclass
class Run:
    bound: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def parse(text: str) -> list[Exchange]:
    blocks = list(BLOCK.finditer(text))
    out: list[Exchange] = []
    for i, m in enumerate(blocks):
        body = m.group(1)
        if body.startswith("HTTP/"):
            continue
        head, _, payload = body.partition("\n\n")
        request_line, *header_lines = head.splitlines()
        method, path = request_line.split(" ", 1)
        headers = dict(h.split(": ", 1) for h in header_lines)
        ex = Exchange(text.count("\n", 0, m.start()) + 1, method, path.strip(), headers, payload.strip(), None)
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        if following is not None and following.group(1).startswith("HTTP/"):
            status_line, _, answer = following.group(1).partition("\n\n")
            ex.status = int(status_line.split()[1])
            ex.expected = json.loads(answer) if answer.strip() else None
            ex.answer_span = following.span(1)
        out.append(ex)
    return out


def _fill(text: str, run: Run, where: str) -> str:
    def value(m: re.Match[str]) -> str:
        if m.group(1) not in run.bound:
            run.problems.append(f"{where}: {{{m.group(1)}}} is used before the guide names it")
            return m.group(0)
        return run.bound[m.group(1)]

    return NAME.sub(value, text)


def send(url: str, ex: Exchange, run: Run) -> tuple[int, Any]:
    where = f"guide.md:{ex.line}"
    data = _fill(ex.body, run, where).encode() if ex.body else None
    headers = {k: _fill(v, run, where) for k, v in ex.headers.items()}
    if data is not None:
        headers.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url + _fill(ex.path, run, where), data=data, headers=headers, method=ex.method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    return status, (json.loads(raw) if raw else None)


def compare(expected: Any, actual: Any, run: Run, where: str) -> None:
    """Require `actual` to be what `expected` says, binding the names it shows for the first time."""
    if isinstance(expected, str):
        if expected == "<any>":
            return
        if expected == "<time>":
            if not (isinstance(actual, str) and TIME.match(actual)):
                run.problems.append(f"{where}: expected a timestamp, got {actual!r}")
            return
        if expected == "<id>":
            if not (isinstance(actual, str) and ID.match(actual)):
                run.problems.append(f"{where}: expected an id, got {actual!r}")
            return
        whole = NAME.fullmatch(expected)
        if whole and whole.group(1) not in run.bound:
            if not isinstance(actual, str):
                run.problems.append(f"{where}: {expected} names a string, got {actual!r}")
            else:
                run.bound[whole.group(1)] = actual
            return
        expected = _fill(expected, run, where)
        if "<time>" in expected:
            # A text with timestamps inside it (a memory block's documents say when each was written).
            pattern = "".join(
                TIME_TEXT if part == "<time>" else re.escape(part) for part in re.split("(<time>)", expected)
            )
            if not (isinstance(actual, str) and re.fullmatch(pattern, actual)):
                run.problems.append(f"{where}: the guide says {expected!r}, the service answered {actual!r}")
            return
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(expected) != set(actual):
            missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
            run.problems.append(f"{where}: keys differ: the guide has {missing} the service lacks, lacks {extra}")
        for key in expected.keys() & actual.keys():
            compare(expected[key], actual[key], run, f"{where}.{key}")
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            run.problems.append(f"{where}: {len(expected)} items in the guide, {len(actual)} answered")
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            compare(e, a, run, f"{where}[{i}]")
        return
    if expected != actual:
        run.problems.append(f"{where}: the guide says {expected!r}, the service answered {actual!r}")


def template(expected: Any, actual: Any, run: Run) -> Any:
    """The answer as the guide should show it: `actual`, with the guide's placeholders kept and known values
    written as their names."""
    if isinstance(expected, str) and (expected in WILDCARDS or NAME.fullmatch(expected)):
        return expected
    if isinstance(actual, dict):
        given = expected if isinstance(expected, dict) else {}
        return {k: template(given.get(k), v, run) for k, v in actual.items()}
    if isinstance(actual, list):
        given_list = expected if isinstance(expected, list) else []
        return [template(given_list[i] if i < len(given_list) else None, v, run) for i, v in enumerate(actual)]
    if isinstance(actual, str):
        names = {v: k for k, v in run.bound.items()}
        if actual in names:
            return "{" + names[actual] + "}"
        if TIME.match(actual):
            return "<time>"
        if ID.match(actual):
            return "<id>"
        for value, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
            actual = actual.replace(value, "{" + name + "}")
        return re.sub(TIME_TEXT, "<time>", actual)
    return actual


def run_guide(url: str, operator_key: str, text: str | None = None, *, write: bool = False) -> tuple[Run, str]:
    """Send every exchange in order; answer the problems found (and, with `write`, the rewritten guide)."""
    text = GUIDE.read_text() if text is None else text
    run = Run(bound={"operator_key": operator_key})
    url = url.rstrip("/")
    edits: list[tuple[tuple[int, int], str]] = []
    for ex in parse(text):
        status, actual = send(url, ex, run)
        where = f"guide.md:{ex.line} {ex.method} {ex.path}"
        if ex.answer_span is None:
            run.problems.append(f"{where}: no answer block follows the request")
            continue
        if write:
            compare(ex.expected, actual, Run(bound=run.bound), where)  # binds the names the guide shows
            shown = template(ex.expected, actual, run)
            status_line = f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}"
            body = "" if shown is None else "\n\n" + json.dumps(shown, indent=2, ensure_ascii=False)
            edits.append((ex.answer_span, status_line + body))
            continue
        if status != ex.status:
            run.problems.append(f"{where}: the guide says HTTP {ex.status}, the service answered {status}: {actual}")
            continue
        compare(ex.expected, actual, run, where)
    for (start, end), new in reversed(edits):
        text = text[:start] + new + text[end:]
    return run, text


def main() -> int:
    parser = argparse.ArgumentParser(description="Run docs/guide.md against a throwaway local server.")
    parser.add_argument("--write", action="store_true", help="rewrite the guide's answers from the service's")
    args = parser.parse_args()
    import os

    for limit in ("", "ACCOUNT_", "ORIGIN_"):
        os.environ[f"AGENT_MEMORY_{limit}WRITES_PER_MINUTE"] = "off"
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from agent_memory_sdk.local.runtime import start_local

    service = start_local(port=0)
    try:
        run, text = run_guide(service.url, service.operator_key, write=args.write)
    finally:
        service.stop()
    for problem in run.problems:
        print(problem)
    if args.write:
        GUIDE.write_text(text)
        print(f"rewrote the answers of {GUIDE.relative_to(GUIDE.parents[1])}")
    return 1 if run.problems and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
