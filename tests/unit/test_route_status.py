"""A handler answers a body; the status it is sent with is its route's (edges/http/glue.reply_of)."""

from __future__ import annotations

import pytest
from agent_memory.api.contract import BY_NAME
from agent_memory.edges.http.glue import Shown, reply_of


def test_a_body_is_sent_with_the_routes_own_status() -> None:
    assert reply_of(BY_NAME["create_workspace"], {"workspace": {}}).status == BY_NAME["create_workspace"].status == 201
    assert reply_of(BY_NAME["update_workspace"], {"workspace": {}}).status == 200


def test_no_content_is_204_where_the_route_declares_it() -> None:
    # The route's own status (a deletion), or its alternative (a review that deletes what it rejects)
    assert reply_of(BY_NAME["conversation_memory_delete"], None).status == 204
    assert reply_of(BY_NAME["conversation_memory_review"], None).status == 204
    # A route that declares no 204 cannot answer without content: that is a handler's bug, not a 204
    with pytest.raises(LookupError):
        reply_of(BY_NAME["create_workspace"], None)
    # Nor can a 204 route answer a body
    with pytest.raises(LookupError):
        reply_of(BY_NAME["conversation_memory_delete"], {"memory": {}})


def test_the_alternative_status_is_the_routes_other_success() -> None:
    route = BY_NAME["records_append"]
    merged = reply_of(route, Shown({"merged": True}, alternative=True))
    assert (merged.status, merged.body) == (route.also[0], {"merged": True}) == (200, {"merged": True})
    with pytest.raises(LookupError):
        reply_of(BY_NAME["create_workspace"], Shown({}, alternative=True))


def test_headers_ride_with_the_body() -> None:
    reply = reply_of(BY_NAME["records_export"], Shown("{}\n", {"content-type": "application/x-ndjson"}))
    assert (reply.status, reply.body, reply.headers) == (200, "{}\n", {"content-type": "application/x-ndjson"})
