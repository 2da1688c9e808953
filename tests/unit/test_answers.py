"""The answer models: every route's entry names a real model, and each published example is one the model
takes. That the models are true to the views is the fuzz's check (tests/http/test_fuzz.py validates every
success answer against the document, whose schemas are these models)."""

from __future__ import annotations

from agent_memory.api.contract import ROUTES
from agent_memory.edges.answers import _BY_HANDLER, ANSWERS, UNDESCRIBED, answer_model
from agent_memory.edges.http.openapi import document


def test_every_handler_named_is_a_routes_handler() -> None:
    # A handler renamed in the contract would silently lose its answer model
    assert set(_BY_HANDLER) <= {r.handler for r in ROUTES}


def test_every_route_with_a_json_answer_has_a_model_or_is_listed_undescribed() -> None:
    for route in ROUTES:
        json_answer = route.media == "application/json" and route.status != 204
        if route.name in ANSWERS:
            assert json_answer, route.name
            answer_model(ANSWERS[route.name])
        else:
            assert route.name in UNDESCRIBED or not json_answer, route.name


def test_each_published_answer_example_is_one_its_model_takes() -> None:
    paths = document()["paths"]
    checked = 0
    for route in ROUTES:
        if route.name not in ANSWERS:
            continue
        content = paths[route.path][route.method.lower()]["responses"][str(route.status)]["content"]
        answer_model(ANSWERS[route.name]).model_validate(content[route.media]["example"])
        checked += 1
    assert checked == len(ANSWERS)
