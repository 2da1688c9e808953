"""Rewrite the README's route table from agent_memory.api.contract.ROUTES, in their order.

The rows sit between the `| route | method | path |` header (and its rule) and `## Deploying`; paths are
shown without the `/agent_api/v1` prefix every route shares. `--check` fails when the README has drifted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "shared"))

from agent_memory.api.contract import ROUTES  # noqa: E402

README = ROOT / "README.md"
HEADER = "| route | method | path |\n|---|---|---|\n"
END = "## Deploying"
PREFIX = "/agent_api/v1"


def render(text: str) -> str:
    start = text.index(HEADER) + len(HEADER)
    end = text.index(END, start)
    rows = "".join(f"| `{r.name}` | {r.method} | `{r.path.removeprefix(PREFIX)}` |\n" for r in ROUTES)
    return text[:start] + rows + "\n" + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if README.md is out of date")
    args = parser.parse_args()
    text = README.read_text()
    out = render(text)
    if args.check:
        if out != text:
            print("out of date: README.md route table (run .ci/readme_routes.py)")
            return 1
        return 0
    README.write_text(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
