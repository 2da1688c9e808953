"""A conversation's store entries (list, show, write, delete) and merging a fork back into its parent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Request
from agent_memory.edges.http.handlers import answered, no_content, parsed
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.core.model import StoreEntry
    from agent_memory.domain.directory.merge import MergeResult, Strategy


def _ids(req: Request) -> tuple[str, str]:
    return req.params["workspace_public_id"], req.params["conversation_public_id"]


def list_entries(req: Request) -> object:
    entries = services.entries().listing(req.token, *_ids(req))
    return {"entries": [views.store_entry(e) for e in entries]}


def show_entry(req: Request) -> object:
    from agent_memory.edges.requests.conversations import StoreEntryShow

    e = parsed(req, StoreEntryShow).entry
    return {"entry": views.store_entry(services.entries().show(req.token, *_ids(req), e.key), value=True)}


def _written(e: StoreEntry) -> object:
    return {"entry": views.store_entry(e, value=True)}


def write_entry(req: Request) -> object:
    from agent_memory.edges.requests.conversations import StoreEntryWrite

    e = parsed(req, StoreEntryWrite).entry
    return answered(
        req,
        _written,
        lambda: services.entries().write(req.token, *_ids(req), e.key, e.value, e.expected_lock_version),
    )


def delete_entry(req: Request) -> object:
    from agent_memory.edges.requests.conversations import StoreEntryDelete

    e = parsed(req, StoreEntryDelete).entry
    return answered(
        req, no_content, lambda: services.entries().delete(req.token, *_ids(req), e.key, e.expected_lock_version)
    )


def _merged(out: MergeResult) -> object:
    return views.merged(out.landed, out.kept, out.parent, out.context)


def merge_conversation(req: Request) -> object:
    from agent_memory.edges.requests.conversations import MergeConversation

    m = parsed(req, MergeConversation).merge
    strategy: Strategy = (
        "prefer_child"
        if m.strategy == "prefer_child"
        else ("prefer_parent" if m.strategy == "prefer_parent" else "fail")
    )
    return answered(req, _merged, lambda: services.merges().merge(req.token, *_ids(req), m.into, strategy))
