"""docs/guide.md is executed: every request it shows is sent, every answer it shows is what the service says."""

from __future__ import annotations

from agent_memory_sdk.local.runtime import LocalService

from ..guide import GUIDE, parse, run_guide


def test_the_guide_answers_are_the_services(fresh: LocalService) -> None:
    # When every request of the guide is sent in order to a fresh server
    run, _ = run_guide(fresh.url, fresh.operator_key)
    # Then every answer is the one the guide shows (run `python -m tests.guide --write` after a change)
    assert not run.problems, "\n".join(run.problems[:10])
    # And the guide walks through each flow, with the answers' names bound along the way
    assert {"ada", "ws", "planner", "conv", "plan", "runbooks", "ex", "decision", "fork"} <= set(run.bound)
    assert len(parse(GUIDE.read_text())) >= 25


def test_a_guide_that_drifted_is_caught(fresh: LocalService) -> None:
    # Given the guide with one answer changed, as a service change would leave it
    text = GUIDE.read_text()
    drifted = text.replace('"content_replaced": true', '"content_replaced": false', 1)
    assert drifted != text
    # When it runs, the difference is reported with where it is
    run, _ = run_guide(fresh.url, fresh.operator_key, drifted)
    assert len(run.problems) == 1 and "content_replaced" in run.problems[0], run.problems


def test_write_mode_keeps_placeholders_and_names_known_values(fresh: LocalService) -> None:
    # When the answers are regenerated from the service, the guide comes out as committed
    _, rewritten = run_guide(fresh.url, fresh.operator_key, write=True)
    assert rewritten == GUIDE.read_text()
