"""Organization Memories: creation, the name grammar, listing, detail, settings, archive and deletion."""

from __future__ import annotations

import pytest

from ..support import Api
from .orgmem import Memories, pair

pytestmark = pytest.mark.http


@pytest.fixture
def mems(api: Api) -> Memories:
    return Memories(api)


def test_create_with_files_then_read_and_write_them(api: Api, mems: Memories) -> None:
    ada = api.account()
    made = mems.made(ada, files=[{"path": "deploy/steps.md", "content": "# Deploy\n1. build\n"}])
    assert made["memory_id"].startswith("mem_") and len(made["memory_id"]) == 36
    assert made["source"] == "native" and made["archived"] is False and made["default"] is None
    assert made["access"] is None and made["file_count"] == 1 and made["bytesize"] == 18
    assert made["created_by"]["public_id"] == ada.public_id
    mem = made["memory_id"]
    shown = mems.show_file(ada, mem, "deploy/steps.md")
    assert shown.status_code == 200, shown.text
    f = shown.json()["file"]
    assert f["path"] == "deploy/steps.md" and f["content"].startswith("# Deploy")
    w = mems.write(ada, mem, "deploy/steps.md", "# Deploy\n1. build\n2. ship\n", pair(f))
    assert w.status_code == 201, w.text
    assert w.json()["file"]["lock_version"] == 1
    listing = mems.files(ada, mem)
    assert listing.status_code == 200, listing.text
    assert [x["path"] for x in listing.json()["files"]] == ["deploy/steps.md"]
    detail = mems.show(ada, mem).json()["memory"]
    assert detail["file_count"] == 1 and detail["bytesize"] == 26 and detail["referenced_by"] == []
