"""`agent-memory <command> --help` describes every option and says its default."""

from __future__ import annotations

import argparse
import re

import pytest
from agent_memory.domain.memory.block import DEFAULT_BUDGET_BYTES
from agent_memory.store.sweeper import DEFAULT_GRACE_SECONDS, DEFAULT_SETTLE_SECONDS
from agent_memory_sdk.local import cli


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMANDS = _commands()


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def test_every_command_is_described() -> None:
    assert set(COMMANDS) == {"serve", "sweep", "reindex-records", "mcp", "mount", "sync"}
    for name, parser in COMMANDS.items():
        assert parser.description, f"`agent-memory {name} --help` has no description"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_says_what_it_does_and_its_default(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = COMMANDS[name]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        flag = action.option_strings[0]
        text = action.help or ""
        # A sentence of its own, and what happens when the option is left out
        assert len(text.split()) >= 4, f"{name} {flag}: {text!r}"
        assert re.search(r"\bdefault\b|\brequired\b", text), f"{name} {flag} does not say its default: {text!r}"
        # A value default is spelled in the help as the parser holds it
        if action.default not in (None, False) and not (name in ("mcp", "mount", "sync") and flag == "--url"):
            assert _number(action.default) in text, f"{name} {flag}: default {action.default!r} not in {text!r}"
    # And --help prints it all, exiting 0
    with pytest.raises(SystemExit) as exit_:
        cli.main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(a.option_strings[0] in out for a in parser._actions)


def test_the_defaults_said_are_the_ones_used() -> None:
    sweep = {a.dest: a for a in COMMANDS["sweep"]._actions}
    assert sweep["grace_seconds"].default == DEFAULT_GRACE_SECONDS
    assert sweep["settle_seconds"].default == DEFAULT_SETTLE_SECONDS
    mcp = {a.dest: a for a in COMMANDS["mcp"]._actions}
    assert f"{DEFAULT_BUDGET_BYTES} bytes" in (mcp["block_budget"].help or "")
    assert "http://127.0.0.1:3000" in (mcp["url"].help or "")
