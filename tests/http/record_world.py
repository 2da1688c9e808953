"""A world for the typed-record HTTP tests (issue 15) and the verbs they send.

Ada created the workspace, which makes her its first curator; alpha is a program agent member, Bob a
member, Vic a viewer, Cora and Dora curators. `other_ws` is a second workspace of the same account
(Ada's; alpha, Bob, Vic and Cora are members of it too, Dora is not), so that a record id of one
workspace can be tried through the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from ..support import Api, Who, code
from .runs import Run, make_run


@dataclass
class RecordRoom:
    run: Run
    cora: Who
    dora: Who
    other_ws: str

    @property
    def api(self) -> Api:
        return self.run.api

    @property
    def ws(self) -> str:
        return self.run.ws

    @property
    def ada(self) -> Who:
        return self.run.ada

    @property
    def alpha(self) -> Who:
        return self.run.alpha

    @property
    def bob(self) -> Who:
        return self.run.bob

    @property
    def vic(self) -> Who:
        return self.run.vic

    def everyone(self) -> list[Who]:
        return [self.ada, self.alpha, self.bob, self.vic, self.cora, self.dora]

    def curators(self) -> list[Who]:
        return [self.ada, self.cora, self.dora]

    def url(self, ws: str | None = None) -> str:
        return f"/workspaces/{ws or self.ws}/records"

    # ---- the verbs ------------------------------------------------------------------------------------

    def append_r(
        self, who: Who, ws: str | None = None, headers: dict[str, str] | None = None, **fields: Any
    ) -> requests.Response:
        body = {"type": "fact", **fields}
        return self.api.post(self.url(ws), who, {"record": body}, headers=headers)

    def append(self, who: Who, content: str, ws: str | None = None, **fields: Any) -> dict[str, Any]:
        """A new record (201), its answer's record."""
        r = self.append_r(who, ws, content=content, **fields)
        assert r.status_code == 201, r.text
        assert r.json()["merged"] is False
        rec: dict[str, Any] = r.json()["record"]
        return rec

    def show_r(self, who: Who, record_id: str, ws: str | None = None) -> requests.Response:
        return self.api.get(f"{self.url(ws)}/{record_id}", who)

    def show(self, who: Who, record_id: str, ws: str | None = None) -> dict[str, Any]:
        r = self.show_r(who, record_id, ws)
        assert r.status_code == 200, r.text
        rec: dict[str, Any] = r.json()["record"]
        return rec

    def hidden_from(self, who: Who, record_id: str, ws: str | None = None) -> bool:
        """Whether a read by id tells `who` the record does not exist."""
        r = self.show_r(who, record_id, ws)
        if code(r) == (404, "not_found"):
            return True
        assert r.status_code == 200, r.text
        return False

    def update_r(
        self, who: Who, record_id: str, headers: dict[str, str] | None = None, **fields: Any
    ) -> requests.Response:
        return self.api.post(f"{self.url()}/{record_id}", who, {"record": fields}, headers=headers)

    def delete_r(self, who: Who, record_id: str, **fields: Any) -> requests.Response:
        return self.api.post(f"{self.url()}/{record_id}/delete", who, {"record": fields})

    def review_r(self, who: Who, record_id: str, decision: str) -> requests.Response:
        return self.api.post(f"{self.url()}/{record_id}/review", who, {"review": {"decision": decision}})

    def search_r(self, who: Who, ws: str | None = None, **fields: Any) -> requests.Response:
        return self.api.post(f"{self.url(ws)}/search", who, {"search": fields})

    def search(self, who: Who, ws: str | None = None, **fields: Any) -> list[dict[str, Any]]:
        """Every result of one page: [{"record", "score"}]."""
        r = self.search_r(who, ws, **fields)
        assert r.status_code == 200, r.text
        results: list[dict[str, Any]] = r.json()["results"]
        return results

    def found(self, who: Who, ws: str | None = None, **fields: Any) -> list[str]:
        """The ids one search page answers `who`, in rank order."""
        return [hit["record"]["public_id"] for hit in self.search(who, ws, **fields)]

    def consolidate_r(
        self, who: Who, headers: dict[str, str] | None = None, api: Api | None = None, **fields: Any
    ) -> requests.Response:
        return (api or self.api).post(f"{self.url()}/consolidate", who, {"consolidate": fields}, headers=headers)


def make_room(api: Api) -> RecordRoom:
    run = make_run(api)
    cora = api.human(run.ada, "cora")
    api.member(run.ada, run.ws, cora, role="curator")
    dora = api.human(run.ada, "dora")
    api.member(run.ada, run.ws, dora, role="curator")
    other = api.workspace(run.ada, "elsewhere")
    for who, role in ((run.alpha, "member"), (run.bob, "member"), (run.vic, "viewer"), (cora, "curator")):
        api.member(run.ada, other, who, role=role)
    return RecordRoom(run, cora, dora, other)
