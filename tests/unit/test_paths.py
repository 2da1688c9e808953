"""The path grammar, checked against an independent reading of it, and the resolver's root -> anchor step."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, cast

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.core.bindings import Binding
from agent_memory.core.context import Context, Source
from agent_memory.core.model import Anchor, Principal
from agent_memory.core.paths import (
    MAX_PATH_BYTES,
    MAX_REST_BYTES,
    SCOPES,
    MemoryPath,
    check_skill_path,
    parse_document_path,
    parse_prefix,
    prefix_matches,
)
from agent_memory.core.ports import Ref, Store
from agent_memory.store.keys import anchor_pk, document, ref_key
from hypothesis import example, given, settings
from hypothesis import strategies as st

# ---- an independent statement of the grammar ---------------------------------------------------------

ROOT = re.compile(r"[a-z][a-z0-9_-]{0,31}")


# DynamoDB's bounds on the two keys of a document row, in UTF-8 bytes.
SORT_KEY_BYTES = 1024
PARTITION_KEY_BYTES = 2048
# Characters that render as nothing: Unicode's Bidi_Control property (PropList.txt: the Arabic letter
# mark, LRM and RLM, the embeddings and overrides, the isolates), and the zero-width spaces, joiners,
# invisible operators and byte order mark.
BIDI_CONTROL = {"\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))}
ZERO_WIDTH = set("\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff")


def invisible(ch: str) -> bool:
    return ch in BIDI_CONTROL or ch in ZERO_WIDTH


def bad_char(ch: str) -> bool:
    """Characters no path segment may hold: controls, lone surrogates, line separators, backslash, and
    characters that render as nothing."""
    return unicodedata.category(ch) in ("Cc", "Cs") or ch in "\u2028\u2029\\" or invisible(ch)


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


SKILL = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


# The grammar's dot, slash and backslash look-alikes that NFKC leaves as they are, restated from the rule's text.
LOOKS_LIKE_A_SEPARATOR = set(
    "\u0660\u06d4\u06f0\u0701\u0702\u2e3c\ua4f8\U00010a50"
    "\u0337\u0338\u1735\u2044\u2215\u2571\u27cb\u29f8\u3033"
    "\u20e5\u2216\u2572\u27cd\u29f5\u29f9"
)


def verdict(path: str) -> str | None:
    """None when the path is in the grammar, else the code its refusal must carry.

    The grammar is a grammar of NFC text: a path is judged (and named) by its NFC spelling, so two texts
    that are canonically equal are one path. Its bytes are bounded twice: the whole path, and the rest
    after the root, which is what the row's sort key `DOC#<rest>` must hold."""
    path = nfc(path)
    root, sep, rest = path.partition("/")
    if utf8_len(path) > MAX_PATH_BYTES or utf8_len("DOC#" + rest) > SORT_KEY_BYTES:
        return "memory_path_invalid"
    if not sep or not rest or ROOT.fullmatch(root) is None:
        return "memory_path_invalid"
    if rest == "skills" or rest.startswith("skills/"):
        name = rest[len("skills/") :]
        return None if len(name) <= 64 and SKILL.fullmatch(name) else "skill_name_invalid"
    clean = all(
        seg not in ("", ".", "..")
        and seg == seg.strip()
        and not any(bad_char(c) or c in LOOKS_LIKE_A_SEPARATOR for c in seg)
        and unicodedata.normalize("NFKC", seg) == seg
        for seg in rest.split("/")
    )
    return None if clean else "memory_path_invalid"


def test_the_bidi_controls_include_every_explicit_formatting_character() -> None:
    # A cross-check of the list above against the Unicode database's bidi classes
    explicit = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"}
    assert {chr(c) for c in range(0x110000) if unicodedata.bidirectional(chr(c)) in explicit} <= BIDI_CONTROL


def rejected(path: object) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse_document_path(path)
    return info.value


# ---- strategies: arbitrary text, and text built near the grammar's edges -------------------------------

ROOTS = st.sampled_from(
    [
        *SCOPES,
        "group",
        "person",
        "notes_2",
        "a",
        "a" * 32,
        "a" * 33,
        "",
        "Conversation",
        "1notes",
        "-x",
        "conversation\n",
        " workspace",
        "wörk",
        "con.versation",
        "conversation\x00",
    ]
)
EDGY = (
    "ab./_- \t\n\r\x00\x1f\x7f\x85\x9f\u00a0\u2028\u2029\ud800\udfff\\é日😀"
    # invisible characters, and ones NFC changes: a combining accent, the Angstrom sign, a
    # composition exclusion that NFC makes two characters long, and the soft hyphen (visible enough)
    "\u200b\u200d\u200f\u202e\u2066\u2069\u2060\u2064\ufeff\u061c\u0301\u212b\u0958\u00ad"
)
SEGMENTS = st.one_of(
    st.sampled_from(["", ".", "..", "...", " a", "a ", "notes.md", "skills", "x\\y", "a\nb", "日記.md"]),
    st.text(alphabet=EDGY, max_size=6),
)
NEAR = st.builds(
    lambda root, segs, tail: f"{root}/{'/'.join(segs)}{tail}",
    ROOTS,
    st.lists(SEGMENTS, min_size=0, max_size=4),
    st.sampled_from(["", "/", "//"]),
)
ANY_TEXT = st.text(max_size=80) | st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
PATHS = NEAR | ANY_TEXT


@settings(max_examples=1000)
@given(PATHS)
@example("conversation/plan.md")
@example("conversation\n/plan.md")  # `$` would match before that newline
@example("conversation/a\ud800.md")  # a lone surrogate arrives through a JSON "\ud800" escape
@example("workspace/skills/pdf\n")
@example("workspace/skills/")
@example("workspace/" + "x" * (MAX_PATH_BYTES - len("workspace/")))
@example("workspace/" + "x" * (MAX_PATH_BYTES - len("workspace/") + 1))
@example("a/" + "x" * (SORT_KEY_BYTES - len("DOC#")))  # a one-letter root: the sort key is the bound
@example("a/" + "x" * (SORT_KEY_BYTES - len("DOC#") + 1))
@example("a/" + "\u0958" * 340)  # 1020 bytes as typed, 1360 once NFC splits each into two characters
@example("conversation/cafe\u0301.md")
@example("conversation/pl\u200ban.md")
@example("conversation/\u202egpj.exe")
@example("conversation/\u061c")
@example("conversation/a\u200e")
def test_a_document_path_is_accepted_exactly_when_it_is_in_the_grammar(path: str) -> None:
    expected = verdict(path)
    try:
        mp = parse_document_path(path)
    except ApiError as err:
        # Then anything refused is outside the grammar, and refused with the code its flaw calls for
        assert expected is not None, f"refused a path in the grammar: {path!r}"
        assert err.code == expected
        return
    # Then anything accepted has a root of the root grammar and clean segments, and splits losslessly
    assert expected is None, f"accepted a path outside the grammar: {path!r}"
    assert ROOT.fullmatch(mp.root) is not None
    segments = mp.rest.split("/")
    assert all(seg not in ("", ".", "..") for seg in segments)
    assert not any(bad_char(c) for c in mp.rest)
    # And it is named in NFC, and its row's keys fit DynamoDB's bounds
    assert f"{mp.root}/{mp.rest}" == mp.logical == nfc(path)
    assert utf8_len("DOC#" + mp.rest) <= SORT_KEY_BYTES


@pytest.mark.parametrize(
    "path",
    [
        "plan.md",  # a bare name is never defaulted to a scope
        "conversation",
        "conversation/",
        "/plan.md",
        "conversation//plan.md",
        "conversation/notes/",
        "conversation/./plan.md",
        "conversation/../workspace/plan.md",
        "conversation/..",
        "conversation/a\\b.md",
        "conversation/a\nb.md",
        "conversation/a\u2028b.md",
        "conversation/ plan.md",
        "conversation/plan.md ",
        "Conversation/plan.md",
        "9lives/plan.md",
        "a" * 33 + "/plan.md",
        "workspace/" + "x" * MAX_PATH_BYTES,
        "a/" + "x" * 1022,  # 1024 bytes in all, but its sort key DOC#<rest> would be 1026
        "conversation/pl\u200ban.md",  # looks like conversation/plan.md
        "conversation/\u202egpj.md",  # renders reversed
        "conversation/\ufeffplan.md",
    ],
)
def test_paths_outside_the_grammar_are_memory_path_invalid(path: str) -> None:
    err = rejected(path)
    assert (err.code, err.status) == ("memory_path_invalid", 422)
    assert err.message  # a sentence, not a bare code


@pytest.mark.parametrize("value", [None, 7, ["conversation/plan.md"], {"path": "x"}])
def test_a_path_that_is_not_a_string_is_memory_path_invalid(value: Any) -> None:
    assert rejected(value).code == "memory_path_invalid"


@pytest.mark.parametrize(
    ("path", "root", "rest"),
    [
        ("conversation/plan.md", "conversation", "plan.md"),
        ("workspace/notes/2026/march.md", "workspace", "notes/2026/march.md"),
        ("group/a b.md", "group", "a b.md"),  # inner spaces are part of a name
        ("a_1-b/日記.md", "a_1-b", "日記.md"),
        ("notes/...md", "notes", "...md"),
    ],
)
def test_valid_paths_split_into_root_and_rest(path: str, root: str, rest: str) -> None:
    assert parse_document_path(path) == MemoryPath(root, rest)


def test_canonically_equal_spellings_are_one_path_named_in_nfc() -> None:
    composed, decomposed = "workspace/caf\u00e9.md", "workspace/cafe\u0301.md"
    assert parse_document_path(decomposed) == parse_document_path(composed) == MemoryPath("workspace", "caf\u00e9.md")
    assert parse_prefix("workspace/cafe\u0301") == MemoryPath("workspace", "caf\u00e9")
    # The Angstrom sign is canonically the letter Å
    assert parse_document_path("workspace/\u212b.md").rest == "\u00c5.md"


def test_the_rest_bound_is_what_the_sort_key_leaves_and_the_partition_key_cannot_overflow() -> None:
    # The longest rest makes a sort key of exactly DynamoDB's bound
    longest = "x" * MAX_REST_BYTES
    parse_document_path("a/" + longest)
    anchor = Anchor("conversation", "01990000-0000-7000-8000-00000000c0c0", "01990000-0000-7000-8000-00000000beef")
    assert utf8_len(document(anchor, longest)[1]) == SORT_KEY_BYTES
    # And no anchor, the longest scope word with two UUIDs, comes near the partition key's bound
    widest = max(SCOPES, key=len)
    assert utf8_len(anchor_pk(Anchor(widest, anchor.owner_id, anchor.speaker_id))) < PARTITION_KEY_BYTES // 16


# ---- prefixes (grep and list filters) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "rest"),
    [("workspace", ""), ("workspace/", ""), ("workspace/notes", "notes"), ("workspace/notes/", "notes")],
)
def test_a_prefix_may_name_a_whole_root_or_a_folder(prefix: str, rest: str) -> None:
    assert parse_prefix(prefix) == MemoryPath("workspace", rest)


@pytest.mark.parametrize(
    "prefix",
    ["", "/", "Workspace/", "workspace//", "workspace/../x", "workspace/a\\b", "workspace/a\u200b", "a/" + "x" * 1021],
)
def test_a_malformed_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_prefix(prefix)
    assert info.value.code == "memory_path_invalid"


def test_a_prefix_that_is_not_a_string_is_parameter_invalid() -> None:
    with pytest.raises(ApiError) as info:
        parse_prefix(3)
    assert info.value.code == "parameter_invalid"


@pytest.mark.parametrize(
    ("prefix_rest", "rest", "matches"),
    [
        ("", "anything.md", True),
        ("notes", "notes", True),
        ("notes", "notes/a.md", True),
        ("notes", "notes2.md", False),  # a folder prefix is not a string prefix
        ("notes/a.md", "notes/a.md", True),
        ("notes/a.md", "notes/a.mdx", False),
    ],
)
def test_prefix_matches_whole_segments_only(prefix_rest: str, rest: str, matches: bool) -> None:
    assert prefix_matches(prefix_rest, rest) is matches


# ---- skills/ paths --------------------------------------------------------------------------------------


def test_skill_name_is_what_follows_skills() -> None:
    assert MemoryPath("workspace", "skills/pdf-tools").skill_name == "pdf-tools"
    assert MemoryPath("workspace", "skills").skill_name == ""
    assert MemoryPath("workspace", "skillset/x").skill_name is None
    assert MemoryPath("workspace", "notes/skills/x").skill_name is None


def test_a_conversation_never_holds_skills() -> None:
    with pytest.raises(ApiError) as info:
        check_skill_path("conversation", MemoryPath("conversation", "skills/pdf"))
    assert info.value.code == "skill_scope_unavailable"


@pytest.mark.parametrize(
    "rest", ["skills", "skills/PDF", "skills/a/b", "skills/-a", "skills/a--b", "skills/" + "a" * 65]
)
def test_a_skills_path_without_one_skill_name_is_skill_name_invalid(rest: str) -> None:
    with pytest.raises(ApiError) as info:
        check_skill_path("workspace", MemoryPath("workspace", rest))
    assert info.value.code == "skill_name_invalid"


@pytest.mark.parametrize("rest", ["skills/pdf", "skills/pdf-tools-2", "skills/" + "a" * 64, "notes.md"])
def test_skill_names_and_ordinary_paths_pass(rest: str) -> None:
    check_skill_path("workspace", MemoryPath("workspace", rest))


# ---- resolver: a path reaches its root's anchor and no other -------------------------------------------

HOST = Anchor("conversation", "01990000-0000-7000-8000-00000000c0c0")
OTHER_CONV = Anchor("conversation", "01990000-0000-7000-8000-00000000c1c1")
WS = Anchor("workspace", "01990000-0000-7000-8000-00000000a5a5")
AGENT = Anchor("agent", "01990000-0000-7000-8000-00000000a9a9")
PAIR = Anchor("speaker", AGENT.owner_id, "01990000-0000-7000-8000-00000000beef")
BOUND: dict[str, Anchor | None] = {
    "conversation": HOST,
    "workspace": WS,
    "group": OTHER_CONV,  # an alias of another conversation
    "notes": WS,  # a second name for the same workspace
    "agent": AGENT,
    "person": PAIR,
    "speaker": None,  # bound but unavailable: no speaker selected
}
SCOPE_OF = {
    "conversation": "conversation",
    "workspace": "workspace",
    "group": "conversation",
    "notes": "workspace",
    "agent": "agent",
    "person": "speaker",
    "speaker": "speaker",
}


class NoIO:
    """A store that fails the test if touched: resolving a root must not need storage."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was used ({name}) while resolving a root")


def context() -> Context:
    sources = {
        name: Source(
            Binding(name, SCOPE_OF[name], "read_write"),
            anchor,
            True,
            unavailable=None if anchor else "no speaker is selected",
        )
        for name, anchor in BOUND.items()
    }
    principal = Principal("human", "01990000-0000-7000-8000-0000000000aa", "01990000-0000-7000-8000-0000000000bb")
    return Context(cast(Store, NoIO()), principal, "conversation", sources)


BOUND_NAMES = st.sampled_from([*BOUND, "user", "team", "conversations", "workspace2"])
RESTS = st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join)


@settings(max_examples=500)
@given(st.one_of(st.builds(lambda r, s: f"{r}/{s}", BOUND_NAMES, RESTS), PATHS))
@example("group/../conversation/plan.md")
@example("notes/../../conversation/x.md")
def test_a_path_resolves_to_its_roots_bound_anchor_and_never_another(path: str) -> None:
    try:
        mp = parse_document_path(path)
    except ApiError:
        return  # the grammar test covers refusals
    ctx = context()
    try:
        src = ctx.source(mp)
    except ApiError as err:
        # Then a root that is not bound, or bound but unavailable, is refused; it never falls back
        if mp.root not in BOUND:
            assert err.code == ("memory_scope_unavailable" if mp.root in SCOPES else "memory_path_invalid")
        else:
            assert BOUND[mp.root] is None and err.code == "memory_scope_unavailable"
        return
    # Then the anchor is exactly the bound one, and the row key lives in that anchor's partition
    bound = BOUND[mp.root]
    assert bound is not None and src.anchor == bound
    assert src.name == mp.root
    pk, sk = ref_key(Ref.document(src.anchor, mp.rest))
    assert (pk, sk) == (f"ANCHOR#{bound.key}", f"DOC#{mp.rest}")


def test_an_unbound_scope_word_is_unavailable_and_an_unknown_root_is_invalid() -> None:
    ctx = context()
    with pytest.raises(ApiError) as scope:
        ctx.source(parse_document_path("user/notes.md"))
    with pytest.raises(ApiError) as unknown:
        ctx.source(parse_document_path("team/notes.md"))
    assert scope.value.code == "memory_scope_unavailable"
    assert unknown.value.code == "memory_path_invalid"
