"""The cold-start table measures every function to a successful first answer (tests/coldcases.py)."""

from __future__ import annotations

from agent_memory.api.contract import BY_NAME

from .. import coldcases, coldstart


def test_every_function_has_a_cold_case() -> None:
    # Given every function folder the template deploys
    functions = set(coldstart.functions())
    # Then each is a route with a successful call in the cold-start cases, or one of the non-routes
    assert functions == set(coldcases.CASES) | set(coldcases.NOT_ROUTES)
    # And a route's success is what its contract answers, never a refusal
    for name in coldcases.CASES:
        assert coldcases.expected_status(name) and max(coldcases.expected_status(name)) < 300, name
        assert BY_NAME[name].status in coldcases.expected_status(name)
