"""Grep's bounded work over HTTP: compiling is bounded (400 with the reason), the whole request has a
deadline and a byte budget (200 truncated, with the reason), and each document is fetched once."""

from __future__ import annotations

import resource
import time

import pytest
import regex
from agent_memory.domain.memory import service as memory
from agent_memory.store import CACHE

from ..support import CONV, Api, alias, bindings, code
from .world import World, make_world, s3_calls


@pytest.fixture
def w(api: Api) -> World:
    return make_world(api)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- compiling is bounded ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?:x{1000}){1000}", "multiply to 1000000"),  # 17 characters, ~250 MiB to compile unbounded
        ("((?:x{1000}){1000}){1000}", "multiply to 1000000"),  # the nested version kills a 512 MB Lambda
        ("x{1000000}", "repeats something 1000000 times"),
        ("x{1001,}", "repeats something 1001 times"),
        ("(?:x{1000}){10}(?:y{1000}){10}", "expands to more than 20000"),
        # Hidden from a naive scanner in a comment, after a class, in verbose mode: the engine's parser sees it
        ("(?#[)(?:x{1000}){1000}]", "multiply to 1000000"),
        ("(?x) # [ \n (?:x{1000}){1000} ]", "multiply to 1000000"),
        ("[[](?:x{1000}){1000}", "multiply to 1000000"),
        ("(" * 101 + ")" * 101, "nests groups more than 100 deep"),
        ("x" * 1001, "longer than 1000 characters"),
        ("(?V0V1)x", "not a valid regular expression"),  # a ValueError inside regex: was a 500
        ("(" * 400 + ")" * 400, "nests groups"),  # a RecursionError in regex's parser: was a 500
    ],
)
def test_a_pattern_too_costly_to_compile_is_refused_with_the_reason(w: World, pattern: str, why: str) -> None:
    # Given a document to search
    assert w.api.write(w.owner, w.base, "conversation/a.md", "x" * 100).status_code == 201
    peak = peak_rss_mib()
    # When grepping with a pattern whose compiled form would be huge (or that the engine cannot parse)
    started = time.monotonic()
    r = w.api.grep(w.owner, w.base, pattern)
    elapsed = time.monotonic() - started
    # Then it is refused as parameter_invalid with a sentence saying why, before the engine compiles it
    assert code(r) == (400, "parameter_invalid"), r.text
    assert why in r.json()["error"]["message"]
    assert elapsed < 0.5, f"refusing took {elapsed:.2f}s"
    assert peak_rss_mib() - peak < 50, "the refused pattern was compiled after all"


@pytest.mark.parametrize("pattern", ["(x+x+)+y", "(?:x{100}){100}", "x{1000}", r"\d{4}-\d{2}-\d{2}", "x{e<=1}"])
def test_patterns_within_the_bounds_compile_and_answer(w: World, pattern: str) -> None:
    # Nested unbounded repeats are legitimate: they compile small, and the deadline bounds their matching
    assert w.api.write(w.owner, w.base, "conversation/a.md", "x" * 40 + "\n2026-09-08").status_code == 201
    r = w.api.grep(w.owner, w.base, pattern)
    assert r.status_code == 200, r.text
    assert r.json()["truncated_reason"] is None


def test_the_module_cache_never_keeps_a_grep_pattern(w: World) -> None:
    # Given the regex module's cache empty
    regex.purge()
    assert w.api.write(w.owner, w.base, "conversation/a.md", "alpha beta").status_code == 201
    # When many distinct patterns are grepped, valid ones and refused ones
    for i in range(30):
        assert w.api.grep(w.owner, w.base, f"alpha|x{i}").status_code == 200
        assert code(w.api.grep(w.owner, w.base, f"(?:x{{1000}}){{{1000 + i}}}")) == (400, "parameter_invalid")
    # Then the module holds none of them (neither compiled nor in its per-pattern locale memo)
    assert regex._main._cache == {}
    assert regex._main._locale_sensitive == {}


# ---- the deadline and the byte budget -----------------------------------------------------------------


def test_past_the_deadline_even_a_literal_grep_answers_what_it_has_truncated(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given matching documents, and a deadline already spent when the first document is reached
    for i in range(3):
        assert w.api.write(w.owner, w.base, f"conversation/d{i}.md", "needle").status_code == 201
    monkeypatch.setattr(memory, "GREP_DEADLINE_SECONDS", 0.0)
    # When grepping a literal (which no regex timeout would ever stop)
    r = w.api.grep(w.owner, w.base, "needle")
    # Then the answer is 200, truncated at the deadline, never a timeout error
    assert r.status_code == 200, r.text
    assert r.json() == {"matches": [], "truncated": True, "truncated_reason": "deadline"}


def test_past_the_byte_budget_grep_searches_a_path_order_prefix_and_fetches_only_it(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given five documents of 1000 bytes, each with a match, and a budget that holds two and a half
    for i in range(5):
        body = "needle\n" + "." * 993
        assert w.api.write(w.owner, w.base, f"conversation/d{i}.md", body).status_code == 201
    monkeypatch.setattr(memory, "GREP_BYTE_BUDGET", 2500)
    CACHE.clear()
    # When grepping for them
    with s3_calls("GetObject") as gets:
        r = w.api.grep(w.owner, w.base, "needle")
    # Then the first two documents by path are searched, the answer says why it stopped, and the
    # documents past the budget were never fetched
    assert r.status_code == 200, r.text
    body = r.json()
    assert [m["path"] for m in body["matches"]] == ["conversation/d0.md", "conversation/d1.md"]
    assert body["truncated"] is True and body["truncated_reason"] == "byte_budget"
    assert gets["GetObject"] == 2
    # And the limit, when it is reached first, is the reason given
    cut = w.api.grep(w.owner, w.base, "needle", limit=1).json()
    assert len(cut["matches"]) == 1 and cut["truncated_reason"] == "limit"


def test_a_grep_larger_than_the_cache_fetches_each_document_once(w: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given 40 documents and a content cache with room for only 4 of them (the cache thrashed before)
    text = "line\n" * 200
    for i in range(40):
        assert w.api.write(w.owner, w.base, f"conversation/d{i:02d}.md", text + f"doc {i}").status_code == 201
    monkeypatch.setattr(CACHE, "_limit", 4 * (len(text) * 4 + 200))
    CACHE.clear()
    # When grepping all of them
    with s3_calls("GetObject") as gets:
        r = w.api.grep(w.owner, w.base, r"doc \d+$")
    # Then every document is searched, and each was fetched from S3 exactly once
    assert r.status_code == 200, r.text
    assert len(r.json()["matches"]) == 40
    assert gets["GetObject"] == 40


def test_a_fork_bound_beside_its_parent_greps_both_copies_of_a_shared_version(w: World) -> None:
    # Given a fork of the conversation (its rows name the parent's content versions) bound as an alias
    assert w.api.write(w.owner, w.base, "conversation/plan.md", "ship friday").status_code == 201
    fork = w.api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/fork", w.owner, {})
    assert fork.status_code == 201, fork.text
    child = fork.json()["conversation"]["public_id"]
    assert w.configure(bindings(CONV, alias(child))).status_code == 200
    # When grepping both roots at once
    r = w.api.grep(w.owner, w.base, "friday")
    # Then each row is searched, though both name one content version fetched once
    assert r.status_code == 200, r.text
    assert [m["path"] for m in r.json()["matches"]] == ["conversation/plan.md", "group/plan.md"]
