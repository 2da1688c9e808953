"""The request models validate without pydantic (edges/requests/validation.py); each answer must be the one
pydantic gives for the same declaration (its mirror, edges/requests/schemas.py, is what publishes the schemas).

For every request model and tool input: a body built from its published example, then that body with each
field (and each nested object's field) left out, replaced by values of every JSON type and by the values
the contract's fields take, and joined by unknown and misspelled fields. Both validators must accept the
same bodies with the same values, and refuse the same bodies with the same code and sentence.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.edges import requests as requests_package
from agent_memory.edges.http.openapi import example
from agent_memory.edges.requests.base import api_error, parse
from agent_memory.edges.requests.schemas import mirror
from agent_memory.edges.requests.validation import Model
from pydantic import ValidationError as PydanticValidationError

UUID = "0193f0c2-a1b2-7c4e-8f5d-6a7b8c9d0e1f"
# Values of every JSON type, and ones the contract's fields take (a path, an id, a bound's edges).
PROBES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    7,
    100,
    2**53,
    2**53 + 1,
    1.5,
    "",
    " ",
    "x",
    "\ud800",
    "workspace/notes.md",
    "conversation/plan.md",
    "../etc/passwd",
    "/workspace/runbooks/a.md",
    UUID,
    UUID.upper(),
    "mem_" + "a" * 32,
    "team-runbooks",
    "readwrite",
    "readonly",
    "overwrite",
    "release",
    "reject",
    "decision",
    "raw",
    "Session",
    "Workspace",
    "2026-12-05T10:00:00Z",
    "x" * 5000,
    [],
    ["x"],
    [UUID, UUID],
    [{"path": "notes.md", "content": "x"}],
    {},
    {"a": 1},
    {"git": {"url": "https://example.com/r.git"}},
]


def request_models() -> list[type[Model]]:
    found: dict[str, type[Model]] = {}
    for info in pkgutil.iter_modules(requests_package.__path__):
        module = importlib.import_module(f"agent_memory.edges.requests.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Model) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return sorted(found.values(), key=lambda m: (m.__module__, m.__qualname__))


def _base(model: type[Model]) -> dict[str, Any]:
    schema = mirror(model).model_json_schema()
    built = example(schema, schema.get("$defs", {}))
    return built if isinstance(built, dict) else {}


def bodies(model: type[Model]) -> Iterator[Any]:
    base = _base(model)
    yield base
    yield from ("x", None, [], 5)
    yield base | {"bogus": 1}
    for name in model.model_fields:
        yield {k: v for k, v in base.items() if k != name}
        yield base | {name + "s": 1}
        for probe in PROBES:
            yield base | {name: probe}
        inner = base.get(name)
        if isinstance(inner, dict):
            for key in list(inner) or ["path"]:
                yield base | {name: {k: v for k, v in inner.items() if k != key}}
                yield base | {name: inner | {"bogus": True}}
                for probe in PROBES:
                    yield base | {name: inner | {key: probe}}


def outcome_of_lite(model: type[Model], body: Any) -> tuple[str, Any]:
    try:
        return "accepted", parse(model, body).model_dump()
    except ApiError as err:
        return err.code, err.message


def outcome_of_pydantic(model: type[Model], body: Any) -> tuple[str, Any]:
    try:
        return "accepted", mirror(model).model_validate(body).model_dump(warnings=False)
    except PydanticValidationError as exc:
        err = api_error(exc, "", model)  # type: ignore[arg-type]
        return err.code, err.message


MODELS = request_models()


def test_every_request_module_is_covered() -> None:
    assert len(MODELS) > 100
    assert {m.__module__.rsplit(".", 1)[1] for m in MODELS} >= {
        "conversations",
        "directory",
        "executions",
        "memories",
        "memory",
        "records",
        "tools",
    }


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__qualname__)
def test_validation_answers_as_pydantic_does(model: type[Model]) -> None:
    checked = 0
    for body in bodies(model):
        assert outcome_of_lite(model, body) == outcome_of_pydantic(model, body), body
        checked += 1
    assert checked > 5


def test_a_valid_write_is_read_as_pydantic_reads_it() -> None:
    from agent_memory.edges.requests.memory import MemoryWrite

    body = {
        "memory": {
            "path": "workspace/notes.md",
            "expected_public_id": None,
            "expected_lock_version": None,
            "content": "ship friday",
        }
    }
    lite = parse(MemoryWrite, body)
    assert lite.memory.path.rest == "notes.md" and lite.memory.expected is None
    assert not lite.memory.description_given
    assert lite.model_dump() == mirror(MemoryWrite).model_validate(body).model_dump(warnings=False)


def test_models_are_frozen() -> None:
    from agent_memory.edges.requests.memory import MemoryGrepFields

    fields = parse(MemoryGrepFields, {"pattern": "x"})
    with pytest.raises(TypeError):
        fields.pattern = "y"
    assert fields.limit == 100 and fields.model_fields_set == {"pattern"}


def test_a_request_never_imports_pydantic() -> None:
    """Validating every request model loads no pydantic: only publishing a schema does."""
    code = (
        "import sys\n"
        "from tests.unit.test_request_validation import MODELS, bodies\n"
        "from agent_memory.edges.requests.base import parse\n"
        "from agent_memory.api.errors import ApiError\n"
        "for m in MODELS:\n"
        "    for b in ('x', {}, {'bogus': 1}):\n"
        "        try: parse(m, b)\n"
        "        except ApiError: pass\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('pydantic', 'pydantic_core')))\n"
    )
    script = code.replace("from tests.unit.test_request_validation import MODELS, bodies\n", _MODELS_INLINE)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


_MODELS_INLINE = (
    "import importlib, pkgutil\n"
    "from agent_memory.edges import requests as p\n"
    "from agent_memory.edges.requests.validation import Model\n"
    "MODELS = []\n"
    "for i in pkgutil.iter_modules(p.__path__):\n"
    "    if i.name == 'schemas': continue\n"
    "    mod = importlib.import_module('agent_memory.edges.requests.' + i.name)\n"
    "    MODELS += [v for v in vars(mod).values() if isinstance(v, type) and issubclass(v, Model)]\n"
)
