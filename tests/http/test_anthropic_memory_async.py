"""Claude's memory tool for `AsyncAnthropic`: `AsyncMemoryTool`, the SDK's async command types, the local gateway."""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

import anyio
import pytest
from agent_memory_sdk.client import MemoryApiError, NotAuthenticated, NotFound
from agent_memory_sdk.integrations.anthropic import AsyncMemoryTool, MemoryTool
from agent_memory_sdk.local.runtime import LocalService
from anthropic.lib.tools import BetaAsyncAbstractMemoryTool, ToolError

from .test_anthropic_memory_tool import (
    NOTES,
    Desk,
    _conversation_rows,
    _door,
    aws_hook,
    create,
    delete,
    insert,
    make_desk,
    rename,
    replace,
    view,
)

T = TypeVar("T")


@pytest.fixture
def desk(fresh: LocalService) -> Desk:
    return make_desk(fresh)


def _async_tool(d: Desk, execution: str | None = None, token: str | None = None) -> AsyncMemoryTool:
    return AsyncMemoryTool(url=d.owner.base_url, token=token or d.owner.token, execution_public_id=execution or d.ex)


def _run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return anyio.run(main)


def _script(folder: str) -> list[Any]:
    """One of every command, refusals included, on files under `folder`."""
    a, b = f"{folder}/a.md", f"{folder}/b.md"
    return [
        create(a, "alpha\nbeta\ngamma\nbeta\n"),
        create(a, "refused: it exists\n"),
        view(a),
        view(a, [2, 3]),
        replace(a, "gamma", "GAMMA"),
        replace(a, "beta", "x"),
        replace(a, "omega", "x"),
        insert(a, 0, "zero"),
        insert(a, 99, "x"),
        view(folder),
        rename(a, b),
        rename(a, b),
        view(a),
        delete(b),
        delete(b),
        view("/etc/passwd"),
    ]


def _outcome(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        return "ok", str(call())
    except ToolError as err:
        return "refused", str(err.content)


async def _async_outcome(tool: AsyncMemoryTool, cmd: Any) -> tuple[str, str]:
    try:
        return "ok", str(await tool.execute(cmd))
    except ToolError as err:
        return "refused", str(err.content)


# ---- the same tool, awaited ----------------------------------------------------------------------------


def test_the_async_tool_answers_every_command_as_the_sync_tool_does(desk: Desk) -> None:
    tool = _async_tool(desk)
    # It is the SDK's async memory tool, offered to the model as the memory_20250818 tool
    assert isinstance(tool, BetaAsyncAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    # When the same commands run through the sync tool in one folder and the async tool in another
    synced = [_outcome(partial(desk.tool.execute, cmd)) for cmd in _script("/memories/conversation/sync")]

    async def main() -> list[tuple[str, str]]:
        return [await _async_outcome(tool, cmd) for cmd in _script("/memories/conversation/async")]

    awaited = _run(main)
    # Then every answer and every refusal is the same text, the folder aside
    assert [(k, t.replace("/async", "/sync")) for k, t in awaited] == synced
    assert [k for k, _ in awaited].count("refused") == 8
    assert awaited[4] == (
        "ok",
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\talpha\n     2\tbeta\n     3\tGAMMA\n     4\tbeta\n     5\t",
    )
    # And the changes went through the service: both folders were emptied by their deletes
    assert _conversation_rows(desk) == []


def test_the_async_tool_takes_the_models_input_as_the_tool_runner_hands_it(desk: Desk) -> None:
    tool = _async_tool(desk)

    async def main() -> list[Any]:
        # The tool runner calls `call` with the tool_use block's input, a plain dict
        made = await tool.call({"command": "create", "path": NOTES, "file_text": "one\ntwo\n"})
        edited = await tool.call({"command": "insert", "path": NOTES, "insert_line": 1, "insert_text": "1.5"})
        shown = await tool.call({"command": "view", "path": NOTES, "view_range": [1, 3]})
        return [made, edited, shown]

    made, edited, shown = _run(main)
    assert made == f"File created successfully at: {NOTES}"
    assert edited == f"The file {NOTES} has been edited."
    assert shown.splitlines()[1:] == ["     1\tone", "     2\t1.5", "     3\ttwo"]
    doc = _door(desk).show("conversation/notes.md")
    assert (doc["content"], doc["lock_version"]) == ("one\n1.5\ntwo\n", 1)


def test_the_async_tools_refusals_are_tool_errors_and_refusals_of_the_call_are_the_clients(desk: Desk) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with pytest.raises(ToolError) as refused:
            await _async_tool(desk).execute(view("/memories/conversation/nope.md"))
        out["missing"] = refused.value.content
        with pytest.raises(ToolError) as refused:
            await _async_tool(desk).execute(create("/memories/workspace/policies/leave.md", "x"))
        out["read_only"] = refused.value.content
        # A tool for an execution that does not exist, or with a token that is no token, is the runtime's
        # problem, not the model's: the client's own exceptions come out of the await
        for name, tool in (
            ("unknown", _async_tool(desk, execution="01a233da-0000-7000-8000-000000000000")),
            ("bad_token", _async_tool(desk, token="am_a_not-a-token")),
        ):
            try:
                await tool.execute(view("/memories"))
            except MemoryApiError as err:
                out[name] = err
        return out

    out = _run(main)
    assert out["missing"] == "The path /memories/conversation/nope.md does not exist. Please provide a valid path."
    assert out["read_only"].startswith("The path /memories/workspace/policies/leave.md is read-only in this session")
    assert isinstance(out["unknown"], NotFound)
    assert isinstance(out["bad_token"], NotAuthenticated)
    assert desk.owner.memory_files(desk.policies).show("leave.md")["lock_version"] == 0


def test_the_async_tool_needs_a_url_or_a_client() -> None:
    for cls in (AsyncMemoryTool, MemoryTool):
        with pytest.raises(ValueError, match=f"{cls.__name__} needs the service's url"):
            cls(execution_public_id="e")


# ---- the event loop ---------------------------------------------------------------------------------------


class Held:
    """Holds each memory commit (TransactWriteItems) until released, counting how many are held at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held = 0
        self.most = 0
        self.release = threading.Event()
        self.timed_out = False

    def hook(self, event_name: str, **_: Any) -> None:
        if not event_name.endswith("TransactWriteItems"):
            return
        with self.lock:
            self.held += 1
            self.most = max(self.most, self.held)
        try:
            if not self.release.wait(timeout=10):
                self.timed_out = True
        finally:
            with self.lock:
                self.held -= 1

    async def until_held(self, n: int) -> None:
        """Wait, on the event loop, until `n` commits are held: only a loop the tool never blocks gets here."""
        with anyio.fail_after(10):
            while self.held < n:
                await anyio.sleep(0.01)


def test_commands_run_off_the_event_loop_and_commands_asked_at_once_run_at_once(desk: Desk) -> None:
    tool = _async_tool(desk)
    held = Held()
    paths = [f"/memories/conversation/n{i}.md" for i in range(4)]

    async def main() -> dict[str, str]:
        said: dict[str, str] = {}

        async def one(path: str) -> None:
            said[path] = str(await tool.execute(create(path, path)))

        async with anyio.create_task_group() as tg:
            for path in paths:
                tg.start_soon(one, path)
            # While every command waits on the service, the loop still runs this: then it lets them go
            await held.until_held(len(paths))
            held.release.set()
        return said

    with aws_hook(held.hook):
        said = _run(main)
    # Then the four commits were in flight together, none waited for its release in vain
    assert held.most == len(paths) and not held.timed_out
    assert said == {p: f"File created successfully at: {p}" for p in paths}
    assert sorted(d["path"] for d in _conversation_rows(desk)) == [f"conversation/n{i}.md" for i in range(4)]


def test_a_command_cancelled_in_flight_finishes_and_answers_before_the_cancellation_lands(desk: Desk) -> None:
    desk.run(create(NOTES, "moving\n"))
    tool = _async_tool(desk)
    held = Held()
    seen: dict[str, Any] = {}

    async def main() -> None:
        scope = anyio.CancelScope()

        async def cancel_when_held() -> None:
            # The rename is in its commit when its caller is cancelled; the commit lands a moment later
            await held.until_held(1)
            scope.cancel()
            await anyio.sleep(0.2)
            held.release.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_held)
            with scope:
                seen["said"] = await tool.execute(rename(NOTES, "/memories/conversation/moved.md"))
                seen["rows"] = [d["path"] for d in _conversation_rows(desk)]
                await anyio.sleep(0)  # the caller's next await: where the cancellation lands
                seen["went_on"] = True
            seen["cancelled"] = scope.cancelled_caught

    with aws_hook(held.hook):
        _run(main)
    # Then the command was not abandoned half-way: it finished, and its caller was told what it did...
    assert seen["said"] == f"Successfully renamed {NOTES} to /memories/conversation/moved.md"
    assert seen["rows"] == ["conversation/moved.md"] and not held.timed_out
    # ...and the cancellation still landed, at the caller's next await
    assert seen["cancelled"] is True and "went_on" not in seen
