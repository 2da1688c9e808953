"""Typed records: append, read, update, delete, review, search, consolidate and export."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Request, Shown
from agent_memory.edges.http.handlers import answered, no_content, parsed
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.core.model import TypedRecord
    from agent_memory.domain.records.service import Appended


def _ws(req: Request) -> str:
    return req.params["workspace_public_id"]


def _appended(a: Appended) -> object:
    # A line merged into a record already there is answered with the route's alternative status.
    return Shown(views.appended(a), alternative=a.merged)


def _record(rec: TypedRecord | None) -> object:
    return None if rec is None else {"record": views.record(rec)}


def append_record(req: Request) -> object:
    from agent_memory.domain.records.service import RecordSpec
    from agent_memory.edges.requests.records import AppendRecord

    r = parsed(req, AppendRecord).record
    spec = RecordSpec(
        content=r.content,
        type=r.type,
        layer=r.layer,
        run_id=r.run_id,
        facet=None if r.tags is None else r.tags.facet,
        labels=() if r.tags is None else r.tags.labels,
        source_kind=r.source_kind,
        source_ref=r.source_ref,
        visibility=r.visibility,
        user_id=r.user_id,
        observed_at=r.observed_at,
        valid_from=r.valid_from,
        valid_to=r.valid_to,
        supersedes=r.supersedes,
    )
    return answered(req, _appended, lambda: services.records().append(req.token, _ws(req), spec))


def show_record(req: Request) -> object:
    return _record(services.records().show(req.token, _ws(req), req.params["record_public_id"]))


def update_record(req: Request) -> object:
    from agent_memory.edges.requests.records import UpdateRecord

    r = parsed(req, UpdateRecord).record
    tags = None if r.tags is None else (r.tags.facet, r.tags.labels)
    return answered(
        req,
        _record,
        lambda: services.records().update(
            req.token, _ws(req), req.params["record_public_id"], r.expected_lock_version, r.content, tags
        ),
    )


def delete_record(req: Request) -> object:
    from agent_memory.edges.requests.records import DeleteRecord

    r = parsed(req, DeleteRecord).record
    return answered(
        req,
        no_content,
        lambda: services.records().delete(req.token, _ws(req), req.params["record_public_id"], r.expected_lock_version),
    )


def review_record(req: Request) -> object:
    from agent_memory.edges.requests.records import ReviewRecord

    decision = parsed(req, ReviewRecord).review.decision
    return answered(
        req, _record, lambda: services.records().review(req.token, _ws(req), req.params["record_public_id"], decision)
    )


def search_records(req: Request) -> object:
    from agent_memory.domain.records.service import SearchSpec
    from agent_memory.edges.requests.records import SearchRecords

    s = parsed(req, SearchRecords).search
    spec = SearchSpec(
        query=s.query,
        type=s.type,
        facet=s.facet,
        layer=s.layer,
        run_id=s.run_id,
        user_id=s.user_id,
        include_superseded=s.include_superseded,
        include_expired=s.include_expired,
        quarantine=s.quarantine,
        limit=s.limit,
        cursor=s.cursor,
    )
    return views.record_search(services.records().search(req.token, _ws(req), spec))


def consolidate_records(req: Request) -> object:
    from agent_memory.edges.requests.records import ConsolidateRecords

    c = parsed(req, ConsolidateRecords).consolidate
    return answered(
        req,
        lambda result: views.consolidation(result),
        lambda: services.records().consolidate(req.token, _ws(req), c.run_id, c.extraction_instructions),
    )


def export_records(req: Request) -> object:
    """The workspace's records as NDJSON, one a line, masked; the next page's cursor in a header."""
    from agent_memory.edges.requests.memory import ExportQuery

    cursor = parsed(req, ExportQuery, {"cursor": req.query.get("cursor")}).cursor
    page = services.records().export(req.token, _ws(req), cursor)
    headers = {"content-type": "application/x-ndjson; charset=utf-8"}
    if page.next_cursor:
        headers["export-next-cursor"] = page.next_cursor
    return Shown(views.record_lines(page), headers)
