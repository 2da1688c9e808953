"""The memory block's assembly rules, on the pure functions: order, the prefix rule, naming, the budget."""

from __future__ import annotations

import itertools

from agent_memory.block import Entry, newest_first, plan, render, section_cost
from hypothesis import given, settings
from hypothesis import strategies as st

# Timestamps drawn from a small set so ties (same millisecond) are common and the path tie-break matters.
_TIMES = [f"2026-09-08T00:00:{s:02d}.{ms:03d}Z" for s in range(3) for ms in (0, 500)]


@st.composite
def documents(draw: st.DrawFn) -> list[Entry]:
    paths = draw(
        st.lists(
            st.from_regex(r"(conversation|workspace|agent)/[a-z]{1,6}\.md", fullmatch=True), unique=True, max_size=40
        )
    )
    return [
        Entry(path, draw(st.integers(0, 64 * 1024)), draw(st.sampled_from(_TIMES)), content_key=path) for path in paths
    ]


@given(documents(), st.integers(1, 1024 * 1024))
@settings(max_examples=400, deadline=None)
def test_the_block_is_always_a_prefix_of_the_newest_documents(docs: list[Entry], budget: int) -> None:
    p = plan(docs, budget)
    ordered = newest_first(docs)
    # Included then omitted is exactly the newest-first order: nothing skipped, nothing lost
    assert list(p.included) + list(p.omitted) == ordered
    # The budget holds, and is what was spent
    assert p.used_bytes == sum(section_cost(e) for e in p.included) <= budget
    # The walk stopped at the first document that did not fit (not at a later, smaller one)
    if p.omitted:
        assert p.used_bytes + section_cost(p.omitted[0]) > budget
    # Newest first, path breaking ties
    keys = [(e.written_at, e.path) for e in ordered]
    assert all(a[0] > b[0] or (a[0] == b[0] and a[1] < b[1]) for a, b in itertools.pairwise(keys))


@given(documents(), st.integers(1, 256 * 1024))
@settings(max_examples=150, deadline=None)
def test_every_document_is_rendered_or_named(docs: list[Entry], budget: int) -> None:
    contents = {e.content_key: "x" * e.bytesize for e in docs}
    p = plan(docs, budget)
    text = render(p, contents)
    for e in p.included:
        assert f'<document path="{e.path}" written_at="{e.written_at}">\n' in text
    for e in p.omitted:
        assert f'<document path="{e.path}" bytesize="{e.bytesize}" written_at="{e.written_at}"/>' in text
    # The rendered sections are exactly what was charged
    sections = sum(
        len(f'<document path="{e.path}" written_at="{e.written_at}">\n'.encode()) + e.bytesize + len(b"\n</document>\n")
        for e in p.included
    )
    assert sections == p.used_bytes
    assert (text == "") == (not docs)


def test_a_large_new_document_hides_the_small_old_ones_behind_it() -> None:
    # Given a big newest document and small older ones
    big = Entry("conversation/big.md", 5000, "2026-09-08T00:00:03.000Z", content_key="big")
    small = [Entry(f"conversation/s{i}.md", 10, f"2026-09-08T00:00:0{i}.000Z", content_key=f"s{i}") for i in range(3)]
    # When the budget fits the small ones but not the big one
    p = plan([*small, big], 1000)
    # Then nothing renders, and all four are named newest first
    assert p.included == ()
    assert [e.path for e in p.omitted] == [
        "conversation/big.md",
        "conversation/s2.md",
        "conversation/s1.md",
        "conversation/s0.md",
    ]
    text = render(p, {})
    assert text.startswith("<memory_block>\n<omitted")


def test_paths_are_escaped_in_the_tags() -> None:
    e = Entry('workspace/a"b<c>&.md', 2, "2026-09-08T00:00:00.000Z", content_key="k")
    text = render(plan([e], 1000), {"k": "hi"})
    assert '<document path="workspace/a&quot;b&lt;c&gt;&amp;.md" written_at="2026-09-08T00:00:00.000Z">\nhi\n' in text


def test_an_exact_fit_is_included() -> None:
    e = Entry("conversation/a.md", 100, "2026-09-08T00:00:00.000Z", content_key="a")
    assert plan([e], section_cost(e)).included == (e,)
    assert plan([e], section_cost(e) - 1).omitted == (e,)
