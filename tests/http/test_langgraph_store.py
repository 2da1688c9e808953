"""LangGraph's `BaseStore` kept by the service (`ServiceStore`), against the local gateway.

The same operations run through LangGraph's own `InMemoryStore` and through ours, and must answer the
same; then the concurrency rule (a stale put never lands), the async path, and a real compiled graph whose
nodes read and write memory through `store`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypedDict

import pytest
from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.integrations.langgraph import ServiceStore, StaleItem, VersionedItem
from agent_memory_sdk.local.runtime import LocalService
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError, Item, PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.types import RetryPolicy

from ..support import client_room


class World:
    def __init__(self, owner: MemoryClient, ws: str, memory_id: str) -> None:
        self.owner, self.ws, self.memory_id = owner, ws, memory_id

    def store(self, **kw: Any) -> ServiceStore:
        return ServiceStore.for_memory(self.owner, self.memory_id, **kw)


@pytest.fixture
def world(fresh: LocalService) -> World:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    return World(owner, ws, owner.create_memory("graph-memory", "the graph's long-term memory")["memory_id"])


def _fill(store: BaseStore) -> None:
    store.put(("users", "ada", "prefs"), "food", {"likes": "tea", "score": 3, "tags": ["a", "b"]})
    store.put(("users", "ada", "prefs"), "color", {"likes": "blue", "score": 7, "nested": {"x": 1}})
    store.put(("users", "bob", "prefs"), "food", {"likes": "coffee", "score": 5})
    store.put(("users", "bob"), "profile", {"name": "Bob", "score": 9})
    store.put(("docs", "v1"), "readme", {"text": "how to deploy the service", "score": 1})
    store.put(("docs", "v2"), "readme", {"text": "deploy with care", "score": 2})
    store.put(("docs", "v2"), "odd key/with slash.json", {"text": "a key any string can be", "score": 0})
    store.put(("users", "ada", "prefs"), "food", {"likes": "green tea", "score": 4, "tags": ["a", "b"]})
    store.delete(("users", "bob", "prefs"), "food")
    store.delete(("users", "nobody"), "nothing")  # deleting what is not there changes nothing


def _keys(items: list[Any]) -> set[tuple[tuple[str, ...], str, str]]:
    return {(i.namespace, i.key, repr(sorted(i.value.items()))) for i in items}


SEARCHES: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    ((), {}),
    (("users",), {}),
    (("users", "ada"), {}),
    (("users",), {"filter": {"score": {"$gte": 4}}}),
    (("users",), {"filter": {"score": {"$gt": 3, "$lt": 9}}}),
    ((), {"filter": {"score": {"$ne": 9}}}),
    ((), {"filter": {"tags": ["a", "b"]}}),
    ((), {"filter": {"nested": {"x": 1}}}),
    ((), {"filter": {"likes": "blue"}}),
    ((), {"filter": {"likes": {"$eq": "coffee"}}}),
    (("docs",), {"filter": {"score": {"$lte": 1}}}),
]

LISTINGS: list[dict[str, Any]] = [
    {},
    {"prefix": ("users",)},
    {"prefix": ("users", "*", "prefs")},
    {"suffix": ("prefs",)},
    {"suffix": ("v2",)},
    {"max_depth": 1},
    {"max_depth": 2, "prefix": ("users",)},
    {"limit": 2},
    {"limit": 2, "offset": 2},
    {"prefix": ("docs",), "suffix": ("*",)},
]


def test_every_operation_answers_as_langgraphs_own_store_does(world: World) -> None:
    # Given the same items put, replaced and deleted in LangGraph's InMemoryStore and in ours
    reference, ours = InMemoryStore(), world.store()
    for store in (reference, ours):
        _fill(store)
    # Then a get answers the same item, or None for what is absent or deleted
    for ns, key in [
        (("users", "ada", "prefs"), "food"),
        (("users", "bob", "prefs"), "food"),
        (("docs", "v2"), "odd key/with slash.json"),
        (("nowhere",), "x"),
    ]:
        theirs, got = reference.get(ns, key), ours.get(ns, key)
        assert (got is None) == (theirs is None), (ns, key)
        if theirs is not None and got is not None:
            assert (got.namespace, got.key, got.value) == (theirs.namespace, theirs.key, theirs.value)
            assert got.created_at <= got.updated_at
    # And every search finds the same items (LangGraph does not define their order)
    for prefix, kw in SEARCHES:
        assert _keys(ours.search(prefix, limit=100, **kw)) == _keys(reference.search(prefix, limit=100, **kw)), kw
    # And every namespace listing is the same, in the same (sorted) order. InMemoryStore keeps a namespace
    # once a get or a delete named it, even with no item; ours lists namespaces holding items, as LangGraph's
    # Postgres store does: compared with the reference's surviving items.
    survivors = InMemoryStore()
    for item in reference.search((), limit=1000):
        survivors.put(item.namespace, item.key, item.value)
    for kw in LISTINGS:
        assert ours.list_namespaces(**kw) == survivors.list_namespaces(**kw), kw
    # And the batch form answers each op in order
    assert [type(r).__name__ for r in ours.batch([])] == []


def test_search_pages_newest_first_and_a_query_ranks_through_the_services_grep(world: World) -> None:
    store = world.store()
    for n in range(7):
        store.put(("notes",), f"n{n}", {"text": f"note {n}", "n": n})
    everything = store.search(("notes",), limit=100)
    # Newest first, as the version's written_at says
    assert [i.key for i in everything] == [f"n{n}" for n in reversed(range(7))]
    # Pages with limit and offset never overlap and together are everything
    pages = [store.search(("notes",), limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [i.key for p in pages for i in p] == [i.key for i in everything]
    # A filter pages over what it kept
    assert [i.key for i in store.search(("notes",), filter={"n": {"$gte": 2}}, limit=2, offset=1)] == ["n5", "n4"]
    # A query keeps the items holding any of its words, those with more of them first, with a score
    store.put(("notes",), "deploy", {"text": "Deploy the service on Friday"})
    store.put(("notes",), "friday", {"text": "lunch on friday"})
    found = store.search(("notes",), query="deploy friday", limit=10)
    assert [(i.key, i.score) for i in found] == [("deploy", 1.0), ("friday", 0.5)]
    assert store.search(("notes",), query="nothing-like-this", limit=10) == []


def test_a_put_never_replaces_a_version_its_writer_did_not_see(world: World) -> None:
    store = world.store()
    store.put(("team",), "plan", {"steps": ["build"]})
    mine = store.get(("team",), "plan")
    assert isinstance(mine, VersionedItem) and mine.version[1] == 0
    # Another writer changes it after I read it
    world.store().put(("team",), "plan", {"steps": ["build", "test"]})
    # Then my change on what I read is refused, and theirs stays
    with pytest.raises(StaleItem):
        store.put(("team",), "plan", {"steps": ["build", "ship"]}, expected=mine)
    now = store.get(("team",), "plan")
    assert now is not None and now.value == {"steps": ["build", "test"]}
    # And expected=None creates only while absent
    with pytest.raises(StaleItem):
        store.put(("team",), "plan", {"steps": []}, expected=None)
    store.put(("team",), "fresh", {"ok": True}, expected=None)
    # And on the version I read again, it lands as the next version, created_at kept
    assert isinstance(now, VersionedItem)
    store.put(("team",), "plan", {"steps": ["build", "test", "ship"]}, expected=now)
    last = store.get(("team",), "plan")
    assert isinstance(last, VersionedItem) and last.version[1] == 2 and last.created_at == now.created_at
    # And the service keeps every version, as for any document
    history = world.owner.memory_files(world.memory_id).versions("langgraph/team/plan.json")["versions"]
    assert [v["lock_version"] for v in history] == [2, 1, 0]


def test_racing_read_modify_write_nodes_lose_no_update(world: World) -> None:
    # Given one counter item and eight threads that each add their name, retrying when refused as stale
    world.store().put(("race",), "seen", {"names": []})
    refusals: list[str] = []
    start = threading.Barrier(8)

    def add(name: str) -> None:
        store = world.store(max_workers=1)
        start.wait()
        while True:
            item = store.get(("race",), "seen")
            assert item is not None
            try:
                store.put(("race",), "seen", {"names": [*item.value["names"], name]}, expected=item)
                return
            except StaleItem:
                refusals.append(name)

    threads = [threading.Thread(target=add, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then every name landed exactly once, and the races were real
    final = world.store().get(("race",), "seen")
    assert final is not None and sorted(final.value["names"]) == sorted(f"t{i}" for i in range(8))
    assert refusals


def test_bad_namespaces_and_ttls_are_refused_before_anything_is_sent(world: World) -> None:
    store = world.store()
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):  # the conditional put checks the same
        store.put(("langgraph",), "k", {"v": 1}, expected=None)
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1}, expected=None)
    with pytest.raises(NotImplementedError):
        store.put(("x",), "k", {"v": 1}, ttl=5)
    # A key too long for a document path is the caller's to fix, for every op
    with pytest.raises(ValueError, match="a path the service refuses"):
        store.put(("x",), "k" * 2000, {"v": 1})
    with pytest.raises(ValueError, match="a path the service refuses"):
        store.get(("x",), "k" * 2000)
    with pytest.raises(ValueError, match="a path the service refuses"):
        store.put(("x",), "k" * 2000, {"v": 1}, expected=None)
    assert world.owner.memory_files(world.memory_id).ls()["files"] == []


def test_a_door_root_holds_the_items_too(world: World) -> None:
    store = ServiceStore.for_door(world.owner.workspace_memory(world.ws), "workspace", folder="graph")
    store.put(("prefs",), "tone", {"style": "brief"})
    got = store.get(("prefs",), "tone")
    assert got is not None and got.value == {"style": "brief"}
    assert [d["path"] for d in world.owner.workspace_memory(world.ws).ls()] == ["workspace/graph/prefs/tone.json"]
    assert store.list_namespaces() == [("prefs",)]


# ---- a real graph ------------------------------------------------------------------------------------


class State(TypedDict):
    user: str
    message: str
    reply: str


def _remembering_graph(store: BaseStore, before_put: Callable[[], None] | None = None) -> Any:
    def remember(state: State, *, store: BaseStore) -> dict[str, str]:
        ns = ("users", state["user"])
        item = store.get(ns, "facts")
        facts = [] if item is None else list(item.value["facts"])
        if before_put is not None:
            before_put()
        value = {"facts": [*facts, state["message"]]}
        if isinstance(store, ServiceStore):
            store.put(ns, "facts", value, expected=item)  # refuses if someone changed it since the get
        else:
            store.put(ns, "facts", value)
        return {"reply": f"I know {len(facts) + 1} things about you"}

    builder = StateGraph(State)
    builder.add_node("remember", remember, retry_policy=RetryPolicy(retry_on=StaleItem, initial_interval=0.01))
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    return builder.compile(store=store)


def test_a_compiled_graph_reads_and_writes_memory_through_store(world: World) -> None:
    graph = _remembering_graph(world.store())
    # When the graph runs twice for a user, in two separate invocations
    first = graph.invoke({"user": "ada", "message": "likes tea", "reply": ""})
    second = graph.invoke({"user": "ada", "message": "lives in London", "reply": ""})
    # Then the second run read what the first wrote, through the service
    assert (first["reply"], second["reply"]) == ("I know 1 things about you", "I know 2 things about you")
    shown = world.owner.memory_files(world.memory_id).show("langgraph/users/ada/facts.json")
    assert '"facts": ["likes tea", "lives in London"]' in shown["content"]


def test_a_graph_node_beaten_by_another_writer_is_retried_on_what_is_there_now(world: World) -> None:
    world.store().put(("users", "ada"), "facts", {"facts": ["likes tea"]})
    interloped: list[bool] = []

    def someone_else_writes() -> None:
        if not interloped:  # only on the node's first attempt
            interloped.append(True)
            world.store().put(("users", "ada"), "facts", {"facts": ["likes tea", "plays chess"]})

    graph = _remembering_graph(world.store(), someone_else_writes)
    out = graph.invoke({"user": "ada", "message": "lives in London", "reply": ""})
    # Then the node's stale put was refused, LangGraph ran it again, and no fact was lost
    assert out["reply"] == "I know 3 things about you"
    item = world.store().get(("users", "ada"), "facts")
    assert item is not None and item.value["facts"] == ["likes tea", "plays chess", "lives in London"]


def test_an_async_graph_uses_abatch(world: World) -> None:
    store = world.store()

    async def remember(state: State, *, store: BaseStore) -> dict[str, str]:
        ns = ("users", state["user"])
        item = await store.aget(ns, "facts")
        facts = [] if item is None else list(item.value["facts"])
        await store.aput(ns, "facts", {"facts": [*facts, state["message"]]})
        found = await store.asearch(("users",), query=state["message"])
        spaces = await store.alist_namespaces(prefix=("users",))
        return {"reply": f"{len(facts) + 1} facts, {len(found)} found, {len(spaces)} users"}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    graph = builder.compile(store=store)

    async def main() -> list[str]:
        a = await graph.ainvoke({"user": "ada", "message": "tea", "reply": ""})
        b = await graph.ainvoke({"user": "bob", "message": "coffee", "reply": ""})
        return [a["reply"], b["reply"]]

    assert asyncio.run(main()) == ["1 facts, 1 found, 1 users", "1 facts, 1 found, 2 users"]
    item = store.get(("users", "bob"), "facts")
    assert isinstance(item, Item) and item.value == {"facts": ["coffee"]}


# ---- LangGraph's own list_namespaces semantics, as its store tests state them -----------------------------

NINE = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]
ABF: list[tuple[str, ...]] = [("a", "b", "f"), ("a", "c", "f")]
NAMESPACE_CASES: list[tuple[list[tuple[str, ...]], dict[str, Any], list[tuple[str, ...]]]] = [
    (NINE, {"prefix": ("a", "b")}, [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]),
    (NINE, {"suffix": ("f",)}, [*ABF, ("b", "a", "f")]),
    (NINE, {"prefix": ("a",), "suffix": ("f",)}, ABF),
    (NINE, {"prefix": ("a", "b"), "max_depth": 3}, [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]),
    (NINE, {"prefix": ("a", "b"), "limit": 2}, [("a", "b", "c"), ("a", "b", "d", "e")]),
    (NINE, {"prefix": ("a", "b"), "offset": 2}, [("a", "b", "d", "i"), ("a", "b", "f")]),
    (NINE, {"prefix": ("a", "*", "f")}, ABF),
    (NINE, {"suffix": ("*", "f")}, [*ABF, ("b", "a", "f")]),
    (NINE, {"prefix": ("nonexistent",)}, []),
    (NINE, {"prefix": ("users", "123")}, [("users", "123")]),
    (
        [("users", "123"), ("users", "456"), ("users", "789", "settings"), ("admin", "users", "789")],
        {"prefix": ("users", "*")},
        [("users", "123"), ("users", "456"), ("users", "789", "settings")],
    ),
    (
        [("guests", "456", "preferences"), ("users", "1")],
        {"suffix": ("*", "preferences")},
        [("guests", "456", "preferences")],
    ),
    (
        [("users", "789", "settings"), ("admin", "users", "789")],
        {"prefix": ("*", "users"), "suffix": ("*", "settings")},
        [],
    ),
    (
        [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j", "k")],
        {"max_depth": 2},
        [("a", "b"), ("a", "g"), ("h", "i")],
    ),
    ([("a", "b"), ("c", "d"), ("e", "f", "g")], {}, [("a", "b"), ("c", "d"), ("e", "f", "g")]),
    ([], {}, []),
]


def test_list_namespaces_as_langgraphs_own_tests_state_it(world: World) -> None:
    for n, (spaces, kw, expected) in enumerate(NAMESPACE_CASES):
        # Each case in a folder of its own, so the cases do not see one another's items
        store = world.store(folder=f"case{n}")
        for i, ns in enumerate(spaces):
            store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
        assert store.list_namespaces(**kw) == sorted(expected), kw


def test_list_namespaces_pages_as_langgraph_pages_them(world: World) -> None:
    store = world.store()
    for i in range(12):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    pages = [store.list_namespaces(prefix=("namespace",), limit=5, offset=o) for o in (0, 5, 10)]
    assert pages == [[("namespace", f"sub_{i:02d}") for i in r] for r in (range(5), range(5, 10), range(10, 12))]


def test_langgraph_namespace_rules_hold_for_puts_and_the_langgraph_root_past_the_public_api(world: World) -> None:
    store, doc = world.store(), {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(bad, "foo", doc))
    # "langgraph" is refused only as the first label, and only by the public put
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert (got := store.get(("foo", "langgraph", "foo"), "bar")) is not None and got.value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert [i.value for i in store.search(("langgraph", "foo"))] == [doc]
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None


def test_racing_blind_puts_each_land_on_the_version_they_read_or_are_refused(world: World) -> None:
    # Given eight threads putting the same item at once without reading it first
    world.store().put(("race",), "blind", {"by": "nobody"})
    start = threading.Barrier(8)
    landed: list[str] = []
    refused: list[str] = []

    def put(name: str) -> None:
        store = world.store()
        start.wait()
        try:
            store.put(("race",), "blind", {"by": name})
            landed.append(name)
        except StaleItem:
            refused.append(name)

    threads = [threading.Thread(target=put, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then every put either landed as a version of its own or was refused: none replaced a version unseen
    assert len(landed) + len(refused) == 8 and landed
    history = world.owner.memory_files(world.memory_id).versions("langgraph/race/blind.json")["versions"]
    assert len(history) == 1 + len(landed)
    final = world.store().get(("race",), "blind")
    assert final is not None and final.value["by"] in landed
