"""The authorization matrix: every scope x every kind of caller x every verb, allow or the exact refusal.

One world is built for the module (building it per case would cost ~300 worlds). Every case writes its
own target document as the row's owner, lets one caller try one verb on it, checks what the owner then
sees, and removes the target, so cases never see each other's rows.

The world: Ada owns the room and stewards two programs, `bot` (answers the conversation; no member of the
room) and `sibling` (a member). Bob is a member who stewards `courier`, a member program that controls
the Speaker Sam; the conversation binds every scope, its speaker/ root to Sam. Vic is a viewer, Ozzy a
Human of the account outside the room, Eve a Human of another account.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from agent_memory.api.errors import ApiError
from agent_memory.core.paths import parse_document_path
from agent_memory_sdk.local.runtime import LocalService
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..support import Api, Who, alias, code, conv_base, pair, ws_base

PRINCIPALS = ("steward", "member", "viewer", "outsider", "foreigner", "answering", "sibling", "speakers_agent")
VERBS = ("list", "show", "grep", "write", "edit", "delete")
_counter = itertools.count()


@dataclass
class World:
    api: Api
    who: dict[str, Who]
    ws: str
    conv: str
    sam: str

    @property
    def base(self) -> str:
        return conv_base(self.ws, self.conv)


def binding(name: str, **extra: str) -> dict[str, Any]:
    return {"name": name, "scope": name, "access": "read_write", **extra}


@pytest.fixture(scope="module")
def world(service: LocalService) -> Iterator[World]:
    service.reset()
    api = Api(service.url, service.operator_key)
    ada = api.account()
    bob, vic, ozzy = api.human(ada, "bob"), api.human(ada, "vic"), api.human(ada, "ozzy")
    eve = api.account("other", "eve")
    ws = api.workspace(ada)
    bot, sibling = api.agent(ada, "bot"), api.agent(ada, "sibling")
    courier = api.agent(bob, "courier")
    api.member(ada, ws, bob)
    api.member(ada, ws, vic, role="viewer")
    api.member(ada, ws, sibling)
    api.member(ada, ws, courier)
    sam = api.speaker(bob, courier, "sam")
    every_scope = {
        "bindings": [
            binding("conversation"),
            binding("workspace"),
            binding("user"),
            binding("agent"),
            binding("speaker", speaker_public_id=sam),
        ]
    }
    conv = api.conversation(ada, ws, answering_agent_public_id=bot.public_id, memory_context=every_scope)
    r = api.post("/agents", ada, {"agent": {"name": "desk", "kind": "definition"}})
    assert r.status_code == 201, r.text
    who = {
        "steward": ada,
        "member": bob,
        "viewer": vic,
        "outsider": ozzy,
        "foreigner": eve,
        "answering": bot,
        "sibling": sibling,
        "speakers_agent": courier,
    }
    yield World(api, who, ws, conv, sam)


# ---- expected outcomes ------------------------------------------------------------------------------

# A category says what one caller meets on one target row; VERB_OUTCOMES turns it into each verb's answer.
ALLOW, READ_ONLY, OWN, OWN_VIEWER, UNAVAILABLE, UNAVAILABLE_VIEWER, HIDDEN, FORBIDDEN = (
    "allow",
    "read_only",
    "own",
    "own_viewer",
    "unavailable",
    "unavailable_viewer",
    "hidden",
    "forbidden",
)

# (status, code, sees the target) per verb; writes that succeed must also change the target.
SEEN, UNSEEN = True, False
VERB_OUTCOMES: dict[str, dict[str, tuple[int, str | None, bool]]] = {
    ALLOW: {
        "list": (200, None, SEEN),
        "show": (200, None, SEEN),
        "grep": (200, None, SEEN),
        "write": (201, None, SEEN),
        "edit": (200, None, SEEN),
        "delete": (204, None, SEEN),
    },
    READ_ONLY: {
        "list": (200, None, SEEN),
        "show": (200, None, SEEN),
        "grep": (200, None, SEEN),
        "write": (403, "not_authorized", UNSEEN),
        "edit": (403, "not_authorized", UNSEEN),
        "delete": (403, "not_authorized", UNSEEN),
    },
    # Another caller's own rows under the same root: the target is simply not among them.
    OWN: {
        "list": (200, None, UNSEEN),
        "show": (404, "memory_not_found", UNSEEN),
        "grep": (200, None, UNSEEN),
        "write": (409, "stale_object", UNSEEN),
        "edit": (409, "stale_object", UNSEEN),
        "delete": (409, "stale_object", UNSEEN),
    },
    OWN_VIEWER: {
        "list": (200, None, UNSEEN),
        "show": (404, "memory_not_found", UNSEEN),
        "grep": (200, None, UNSEEN),
        "write": (403, "not_authorized", UNSEEN),
        "edit": (403, "not_authorized", UNSEEN),
        "delete": (403, "not_authorized", UNSEEN),
    },
    UNAVAILABLE: {"list": (200, None, UNSEEN), **dict.fromkeys(VERBS[1:], (422, "memory_scope_unavailable", UNSEEN))},
    UNAVAILABLE_VIEWER: {
        "list": (200, None, UNSEEN),
        "show": (422, "memory_scope_unavailable", UNSEEN),
        "grep": (422, "memory_scope_unavailable", UNSEEN),
        "write": (403, "not_authorized", UNSEEN),
        "edit": (403, "not_authorized", UNSEEN),
        "delete": (403, "not_authorized", UNSEEN),
    },
    HIDDEN: dict.fromkeys(VERBS, (404, "not_found", UNSEEN)),
    FORBIDDEN: dict.fromkeys(VERBS, (403, "not_authorized", UNSEEN)),
}

A, R, OW, OWV, U, UV, H, F = ALLOW, READ_ONLY, OWN, OWN_VIEWER, UNAVAILABLE, UNAVAILABLE_VIEWER, HIDDEN, FORBIDDEN

# door/scope -> (owner who seeds the target, category per principal in PRINCIPALS order)
MATRIX: dict[str, tuple[str, tuple[str, ...]]] = {
    #                               steward member viewer outsider foreigner answering sibling speakers_agent
    "conversation/conversation": ("steward", (A, A, R, H, H, A, A, A)),
    "conversation/workspace": ("steward", (A, A, R, H, H, A, A, A)),
    "conversation/user": ("steward", (A, OW, OWV, H, H, U, U, U)),
    "conversation/agent": ("steward", (A, U, UV, H, H, A, U, U)),
    "conversation/speaker": ("steward", (A, U, UV, H, H, A, U, U)),
    "workspace_door/workspace": ("steward", (A, A, R, H, H, H, A, A)),
    "profile_door/user": ("steward", (A, OW, OW, OW, OW, U, U, U)),
    "profile_door/agent": ("answering", (U, U, U, U, U, A, OW, OW)),
    "definition_door/agent": ("steward", (A, H, H, H, H, F, F, F)),
}


def door_base(world: World, door: str) -> str:
    return {
        "conversation": world.base,
        "workspace_door": ws_base(world.ws),
        "profile_door": "/profile/memory",
        "definition_door": "/profile/agents/desk/memory",
    }[door]


CASES = [
    pytest.param(target, principal, verb, id=f"{target}-{principal}-{verb}")
    for target in MATRIX
    for principal in PRINCIPALS
    for verb in VERBS
]


def attempt(
    api: Api, who: Who, base: str, verb: str, path: str, token: str, seen_pair: tuple[str, int]
) -> requests.Response:
    root = path.split("/")[0]
    if verb == "list":
        return api.ls(who, base)
    if verb == "show":
        return api.show(who, base, path)
    if verb == "grep":
        return api.grep(who, base, token, path=f"{root}/")
    if verb == "write":
        # The strongest attempt: replace the row with the very pair its owner observed.
        return api.write(who, base, path, "overwritten", seen_pair)
    if verb == "edit":
        return api.edit(who, base, path, token, "edited", seen_pair)
    return api.delete(who, base, path, seen_pair)


def sees(r: requests.Response, verb: str, path: str, token: str) -> bool:
    if r.status_code >= 300 or verb == "delete" or r.status_code == 204:
        return False
    body = r.json()
    if verb == "list":
        return path in [m["path"] for m in body["memory"]]
    if verb == "grep":
        return any(m["path"] == path and token in m["text"] for m in body["matches"])
    return bool(body["memory"]["path"] == path)


@pytest.mark.parametrize(("target", "principal", "verb"), CASES)
def test_matrix(world: World, target: str, principal: str, verb: str) -> None:
    api = world.api
    door, scope = target.split("/")
    owner_name, categories = MATRIX[target]
    owner, caller = world.who[owner_name], world.who[principal]
    category = categories[PRINCIPALS.index(principal)]
    status, expected_code, expect_seen = VERB_OUTCOMES[category][verb]
    base = door_base(world, door)
    # Given a target row of this scope, written by its owner
    n = next(_counter)
    token = f"secret{n}"
    path = f"{scope}/case-{n}.md"
    seeded = api.write(owner, base, path, f"the {token} note")
    assert seeded.status_code == 201, seeded.text
    seen_pair = pair(seeded)
    # When the caller tries the verb on it
    r = attempt(api, caller, base, verb, path, token, seen_pair)
    # Then the answer is exactly the one expected for this kind of caller
    assert code(r) == (status, expected_code), r.text
    assert sees(r, verb, path, token) == (expect_seen and verb not in ("delete",))
    # And the owner sees the row changed only when the caller was allowed to change it
    after = api.show(owner, base, path)
    changed = category == ALLOW and verb in ("write", "edit", "delete")
    if not changed:
        assert after.status_code == 200, after.text
        assert pair(after) == seen_pair
        assert after.json()["memory"]["content"] == f"the {token} note"
    elif verb == "delete":
        assert code(after) == (404, "memory_not_found")
    else:
        assert after.json()["memory"]["content"] in ("overwritten", "the edited note")
    if after.status_code == 200:
        assert api.delete(owner, base, path, pair(after)).status_code == 204


def test_the_matrix_covers_every_scope_and_door() -> None:
    scopes = {t.split("/")[1] for t in MATRIX if t.startswith("conversation/")}
    assert scopes == {"conversation", "workspace", "user", "agent", "speaker"}
    assert all(len(cats) == len(PRINCIPALS) for _, cats in MATRIX.values())


# ---- no path, alias or selector reaches another's rows ----------------------------------------------


def test_no_alias_reaches_another_workspace_or_another_account(world: World) -> None:
    # Given a conversation in a second room of Ada's, and one in Eve's account
    api, ada, eve = world.api, world.who["steward"], world.who["foreigner"]
    ws2 = api.workspace(ada, "second")
    other_room = api.conversation(ada, ws2)
    api.write(ada, conv_base(ws2, other_room), "conversation/plan.md", "second room")
    foreign = api.conversation(eve, api.workspace(eve))
    host = api.conversation(ada, world.ws)
    # When a conversation of the first room aliases either
    # Then neither is reachable
    for target in (other_room, foreign):
        group = alias(target)
        r = api.post(
            f"/workspaces/{world.ws}/conversations/{host}/memory_context",
            ada,
            {"memory_context": {"bindings": [binding("conversation"), group]}},
        )
        assert code(r) == (422, "memory_scope_unavailable")
    # And naming a conversation of another room under this room's URL finds nothing
    assert code(api.show(ada, conv_base(world.ws, other_room), "conversation/plan.md")) == (404, "not_found")
    assert code(api.ls(ada, conv_base(ws2, host))) == (404, "not_found")


def test_no_binding_name_reaches_another_humans_user_or_another_agents_rows(world: World) -> None:
    # Given Ada's user/ note and the answering program's agent/ note
    api, ada, bob = world.api, world.who["steward"], world.who["member"]
    created = api.write(ada, world.base, "user/diary.md", "ada's diary")
    assert created.status_code == 201, created.text
    bot_note = api.write(world.who["answering"], world.base, "agent/notes.md", "bot's notes")
    assert bot_note.status_code == 201, bot_note.text
    # When Bob (a member) names user/ and agent/ scopes under other root names on his own conversation
    conv = api.conversation(bob, world.ws, answering_agent_public_id=world.who["sibling"].public_id)
    value = {
        "bindings": [
            binding("conversation"),
            {"name": "ada", "scope": "user", "access": "read"},
            {"name": "bots", "scope": "agent", "access": "read"},
        ]
    }
    r = api.post(f"/workspaces/{world.ws}/conversations/{conv}/memory_context", bob, {"memory_context": value})
    assert r.status_code == 200, r.text
    base = conv_base(world.ws, conv)
    # Then user/ under any name is still Bob's own, and the agent root is not his to read
    assert code(api.show(bob, base, "ada/diary.md")) == (404, "memory_not_found")
    assert code(api.show(bob, base, "bots/notes.md")) == (422, "memory_scope_unavailable")
    assert api.grep(bob, base, "diary|notes").json()["matches"] == []
    # And a path that tries to climb out of its root is not a path
    for path in (
        "conversation/../user/diary.md",
        "user/./diary.md",
        "conversation//diary.md",
        "diary.md",
        "USER/diary.md",
        "user\\diary.md",
    ):
        assert code(api.show(bob, world.base, path)) == (422, "memory_path_invalid"), path


def test_no_selector_reaches_another_pairs_speaker_rows(world: World) -> None:
    # Given the answering program's note about Sam (the conversation binds Sam) and Sam's controller,
    # the courier program, answering a conversation of its own
    api = world.api
    bot, courier, sibling = world.who["answering"], world.who["speakers_agent"], world.who["sibling"]
    note = api.write(bot, world.base, "speaker/sam.md", "bot about sam")
    assert note.status_code == 201, note.text
    own = conv_base(
        world.ws, api.conversation(world.who["member"], world.ws, answering_agent_public_id=courier.public_id)
    )
    # When the courier selects Sam, whom it controls, on its own conversation
    # Then it reaches its own (courier, Sam) pair, never the bot's
    sel = {"speaker_public_id": world.sam}
    assert code(api.show(courier, own, "speaker/sam.md", **sel)) == (404, "memory_not_found")
    assert code(api.delete(courier, own, "speaker/sam.md", pair(note), **sel)) == (409, "stale_object")
    # And selecting Sam on the bot's conversation gives it nothing of the bot's
    assert code(api.show(courier, world.base, "speaker/sam.md", **sel)) == (422, "memory_scope_unavailable")
    # While the bot and a sibling cannot select a speaker they do not control at all
    assert code(api.show(bot, world.base, "speaker/sam.md", **sel)) == (403, "not_authorized")
    assert code(api.ls(sibling, world.base, **{"memory[speaker_public_id]": world.sam})) == (403, "not_authorized")
    assert api.show(bot, world.base, "speaker/sam.md").json()["memory"]["content"] == "bot about sam"


# ---- property: nothing outside the grammar resolves, nothing resolves outside its scope ---------------

_ROOTS = st.sampled_from(
    [
        "conversation",
        "workspace",
        "user",
        "agent",
        "speaker",
        "group",
        "Agent",
        "",
        ".",
        "..",
        "conversation ",
        "x" * 33,
        "skills",
    ]
)
_SEGMENT = st.one_of(
    st.sampled_from(["a.md", "b", ".", "..", "", " a.md", "a.md ", "a\\b", "a\x00", "é.md"]),
    st.text(alphabet="ab./\\ \t\n-_é\u2028", max_size=6),
)
_PATHS = st.one_of(
    st.builds(
        lambda root, sep, segs: root + sep + "/".join(segs),
        _ROOTS,
        st.sampled_from(["/", "", "//"]),
        st.lists(_SEGMENT, max_size=3),
    ),
    st.text(max_size=12),
)


@pytest.fixture(scope="module")
def seeded(world: World) -> dict[str, dict[str, str]]:
    """One `a.md` in every scope, and for each probing caller the public ids it may reach."""
    api, ada, bot = world.api, world.who["steward"], world.who["answering"]
    ids = {}
    for who, path in (
        (ada, "conversation/a.md"),
        (ada, "workspace/a.md"),
        (ada, "user/a.md"),
        (bot, "agent/a.md"),
        (bot, "speaker/a.md"),
    ):
        r = api.write(who, world.base, path, "probe")
        assert r.status_code == 201, r.text
        ids[path] = r.json()["memory"]["public_id"]
    shared = {p: ids[p] for p in ("conversation/a.md", "workspace/a.md")}
    return {
        "member": shared,
        "answering": {**shared, "agent/a.md": ids["agent/a.md"], "speaker/a.md": ids["speaker/a.md"]},
    }


@pytest.mark.parametrize("principal", ["member", "answering"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=_PATHS)
def test_no_path_resolves_outside_the_grammar_or_its_scope(
    world: World, seeded: dict[str, dict[str, str]], principal: str, path: str
) -> None:
    # Given one document in every scope, and a caller who may reach only some of them
    reachable = seeded[principal]
    # When the caller shows an arbitrary path
    r = world.api.show(world.who[principal], world.base, path)
    # Then a path outside the grammar never resolves, and a resolved path is one the caller may reach
    try:
        parse_document_path(path)
    except ApiError:
        assert code(r) == (422, "memory_path_invalid"), (path, r.text)
        return
    if r.status_code == 200:
        assert reachable.get(path) == r.json()["memory"]["public_id"], path
    else:
        assert path not in reachable
        assert code(r)[1] in ("memory_path_invalid", "memory_scope_unavailable", "memory_not_found"), r.text
