"""Read template.yaml: the routes the gateway serves and the table and bucket it creates.

template.yaml is the contract for both AWS and the local gateway, so local runs cannot drift from what
deploys. CloudFormation's short tags (!Ref, !GetAtt, !Sub, ...) are read as plain values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class _CfnLoader(yaml.SafeLoader):
    pass


def _any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return {suffix: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {suffix: loader.construct_sequence(node, deep=True)}
    return {suffix: loader.construct_mapping(node, deep=True)}  # type: ignore[arg-type]


_CfnLoader.add_multi_constructor("!", _any_tag)


@dataclass(frozen=True, slots=True)
class TemplateRoute:
    function: str
    method: str
    path: str
    code_uri: str
    handler: str
    pattern: re.Pattern[str]
    params: tuple[str, ...]


def load_template(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        doc: dict[str, Any] = yaml.load(fh, Loader=_CfnLoader)
    return doc


def _compile(path: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    params = tuple(re.findall(r"{([^}]+)}", path))
    regex = "^" + re.sub(r"\\{([^}]+)\\}", r"(?P<\1>[^/]+)", re.escape(path)) + "$"
    return re.compile(regex), params


DEFAULT_PATH = "$default"


def _all_routes(template: dict[str, Any]) -> list[TemplateRoute]:
    globals_fn = (template.get("Globals") or {}).get("Function") or {}
    out = []
    for name, res in (template.get("Resources") or {}).items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        props = res.get("Properties") or {}
        for event in (props.get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            ep = event["Properties"]
            # An event with no path and method is SAM's spelling of the API's `$default` route.
            path = ep.get("Path", DEFAULT_PATH)
            pattern, params = _compile(path)
            out.append(
                TemplateRoute(
                    name,
                    ep.get("Method", "ANY").upper(),
                    path,
                    props["CodeUri"],
                    props.get("Handler") or globals_fn.get("Handler", "app.handler"),
                    pattern,
                    params,
                )
            )
    return out


def routes(template: dict[str, Any]) -> list[TemplateRoute]:
    """The template's routes, the `$default` one left out (`default_route`)."""
    out = [r for r in _all_routes(template) if r.path != DEFAULT_PATH]
    # Literal segments win over parameters, as API Gateway picks the most specific route.
    out.sort(key=lambda r: (len(r.params), -len(r.path)))
    return out


def default_route(template: dict[str, Any]) -> TemplateRoute | None:
    """The route that answers what no other matches, if the template declares one."""
    return next((r for r in _all_routes(template) if r.path == DEFAULT_PATH), None)


def resource_props(template: dict[str, Any], type_name: str) -> dict[str, Any]:
    for res in (template.get("Resources") or {}).values():
        if res.get("Type") == type_name:
            props: dict[str, Any] = res.get("Properties") or {}
            return props
    raise LookupError(f"template.yaml has no {type_name}")
