"""Transform template.yaml as CloudFormation will (aws-sam-translator) and count the stack's resources.

CloudFormation refuses a stack past 500 resources; this fails CI past 450, leaving room to notice before
a deploy is refused. Run with the SAM CLI's virtualenv (`make stack-size`): aws-sam-translator pins its
own pydantic, so it is kept out of the project's environment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from samtranslator.public.translator import ManagedPolicyLoader
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

LIMIT = 450
ROOT = Path(__file__).resolve().parent.parent


class _NoPolicies(ManagedPolicyLoader):
    """The transform asks IAM for managed policy ARNs only for named policies; none are used here."""

    def __init__(self) -> None:
        pass

    def load(self) -> dict[str, str]:
        return {}


def _placeholders(template: dict[str, Any]) -> None:
    # Local paths become S3 locations, as `sam package` would make them before CloudFormation sees them.
    for res in template.get("Resources", {}).values():
        props = res.get("Properties") or {}
        if res.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = "s3://bucket/code.zip"
        if res.get("Type") == "AWS::Serverless::LayerVersion" and isinstance(props.get("ContentUri"), str):
            props["ContentUri"] = "s3://bucket/layer.zip"


def main() -> int:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    template = yaml_parse((ROOT / "template.yaml").read_text())
    _placeholders(template)
    resources = transform(template, {}, _NoPolicies())["Resources"]
    kinds: dict[str, int] = {}
    for res in resources.values():
        kinds[res["Type"]] = kinds.get(res["Type"], 0) + 1
    summary = ", ".join(f"{n} {t}" for t, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    print(f"stack resources: {len(resources)} of at most {LIMIT} ({summary})")
    if len(resources) > LIMIT:
        print(f"the stack would hold {len(resources)} resources, past {LIMIT}: see .ci/templategen.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
