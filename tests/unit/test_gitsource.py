"""The Git reader of git-synced Memories, against repositories built here with dulwich (no git binary, no network)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.domain.memories import gitsource
from agent_memory.domain.memories.gitsource import GitSnapshot, read_snapshot
from dulwich import porcelain
from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Blob, Commit, ObjectID, Tag, Tree
from dulwich.refs import Ref

from ..gitrepos import EXECUTABLE, GITLINK, REGULAR, SYMLINK, WHO, Content, bare, commit, url_of

# Every repository these tests make lies under the temporary folder: the one root they name.
TMP = (tempfile.gettempdir(),)


def read(
    url: str, ref: str | None = None, path: str | None = None, *, max_files: int = 1000, max_file_bytes: int = 1 << 20
) -> GitSnapshot:
    return read_snapshot(url, ref, path, file_roots=TMP, max_files=max_files, max_file_bytes=max_file_bytes)


def assert_refusal(error: pytest.ExceptionInfo[ApiError], code: str, *words: str) -> None:
    """The code, and a message that is one sentence naming the problem (the words given, in any case)."""
    assert error.value.code == code
    message = error.value.message
    assert re.fullmatch(r"[A-Z'\"a-z0-9].*[.]", message, re.DOTALL), message
    assert "Traceback" not in message
    for word in words:
        assert word.lower() in message.lower(), (word, message)


DOCS: dict[str, Content] = {
    "README.md": b"# Handbook\n",
    "docs/intro.md": b"Welcome.\n",
    "docs/guides/setup.md": b"Install it.\n",
    "docs/guides/deep/er/still.md": b"Nested.\n",
    "tools/run.sh": (EXECUTABLE, b"#!/bin/sh\n"),
}


# ---- what is read -------------------------------------------------------------------------------------


def test_the_whole_tree_is_read_with_relative_posix_keys_sorted(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    sha = commit(repo, DOCS)

    snapshot = read(url_of(repo))

    assert snapshot.commit == sha
    assert re.fullmatch(r"[0-9a-f]{40}", snapshot.commit)
    assert snapshot.ref == "main"
    assert snapshot.path == ""
    assert snapshot.url == url_of(repo)
    assert snapshot.files == {
        "README.md": b"# Handbook\n",
        "docs/guides/deep/er/still.md": b"Nested.\n",
        "docs/guides/setup.md": b"Install it.\n",
        "docs/intro.md": b"Welcome.\n",
        "tools/run.sh": b"#!/bin/sh\n",
    }
    assert list(snapshot.files) == sorted(snapshot.files)


def test_a_sub_folder_is_read_relative_to_itself_and_the_path_is_normalised(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, DOCS)

    snapshot = read(url_of(repo), path="/docs/guides/")

    assert snapshot.path == "docs/guides"
    assert snapshot.files == {"deep/er/still.md": b"Nested.\n", "setup.md": b"Install it.\n"}
    assert read(url_of(repo), path="docs/guides/deep").files == {"er/still.md": b"Nested.\n"}
    assert read(url_of(repo), path="/").path == ""


def test_the_default_branch_is_resolved_from_head(tmp_path: Path) -> None:
    repo = bare(tmp_path, default_branch="trunk")
    on_trunk = commit(repo, {"a.md": b"trunk\n"}, branch="trunk")
    commit(repo, {"a.md": b"other\n"}, branch="main")

    snapshot = read(url_of(repo))

    assert snapshot.ref == "trunk"
    assert snapshot.commit == on_trunk
    assert snapshot.files == {"a.md": b"trunk\n"}


def test_a_working_tree_repository_made_with_porcelain_is_read_too(tmp_path: Path) -> None:
    work = tmp_path / "work"
    porcelain.init(str(work))
    (work / "notes").mkdir()
    (work / "notes" / "one.md").write_bytes(b"one\n")
    porcelain.add(str(work), paths=[str(work / "notes" / "one.md")])
    sha = porcelain.commit(str(work), message=b"first", author=WHO, committer=WHO)

    snapshot = read(work.as_uri(), path="notes")

    assert snapshot.commit == sha.decode()
    assert snapshot.files == {"one.md": b"one\n"}
    # The repository's HEAD names its branch, whatever this dulwich's default branch is called.
    assert snapshot.ref == porcelain.active_branch(str(work)).decode()


def test_an_explicit_branch_is_read_by_short_or_full_name(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"main\n"})
    feature = commit(repo, {"a.md": b"feature\n"}, branch="feature/x")

    for name in ("feature/x", "refs/heads/feature/x"):
        snapshot = read(url_of(repo), ref=name)
        assert (snapshot.ref, snapshot.commit, snapshot.files) == ("feature/x", feature, {"a.md": b"feature\n"})


def test_tags_lightweight_and_annotated_are_read_and_named_in_full(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    first = commit(repo, {"a.md": b"v1\n"})
    repo.refs[Ref(b"refs/tags/light")] = ObjectID(first.encode())
    tag = Tag()
    tag.name, tag.object, tag.tagger, tag.message = b"v1", (Commit, ObjectID(first.encode())), WHO, b"release\n"
    tag.tag_time, tag.tag_timezone = 1_700_000_000, 0
    repo.object_store.add_object(tag)
    repo.refs[Ref(b"refs/tags/v1")] = tag.id
    commit(repo, {"a.md": b"later\n"})

    for name in ("v1", "refs/tags/v1"):
        snapshot = read(url_of(repo), ref=name)
        assert (snapshot.ref, snapshot.commit, snapshot.files) == ("refs/tags/v1", first, {"a.md": b"v1\n"})
    assert read(url_of(repo), ref="light").commit == first


def test_a_tag_of_a_tree_is_not_a_commit_to_read(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    tip = repo[ObjectID(commit(repo, {"a.md": b"a"}).encode())]
    assert isinstance(tip, Commit)
    tag = Tag()
    tag.name, tag.object, tag.tagger, tag.message = b"t", (Tree, tip.tree), WHO, b"tree\n"
    tag.tag_time, tag.tag_timezone = 1_700_000_000, 0
    repo.object_store.add_object(tag)
    repo.refs[Ref(b"refs/tags/t")] = tag.id

    with pytest.raises(ApiError) as error:
        read(url_of(repo), ref="t")
    assert_refusal(error, "memory_source_unavailable", "points at a tree, not at a commit")


def test_a_branch_wins_over_a_tag_of_the_same_name(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    tagged = commit(repo, {"a.md": b"tagged\n"})
    repo.refs[Ref(b"refs/tags/release")] = ObjectID(tagged.encode())
    branch = commit(repo, {"a.md": b"branch\n"}, branch="release")

    assert read(url_of(repo), ref="release").commit == branch
    assert read(url_of(repo), ref="refs/tags/release").commit == tagged


def test_a_second_commit_is_read_once_it_lands(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    first = commit(repo, {"docs/keep.md": b"keep\n", "docs/change.md": b"v1\n", "docs/drop.md": b"bye\n"})
    before = read(url_of(repo), path="docs")

    second = commit(repo, {"docs/keep.md": b"keep\n", "docs/change.md": b"v2\n", "docs/new/added.md": b"hi\n"})
    after = read(url_of(repo), path="docs")

    assert (before.commit, after.commit) == (first, second)
    assert before.files == {"change.md": b"v1\n", "drop.md": b"bye\n", "keep.md": b"keep\n"}
    assert after.files == {"change.md": b"v2\n", "keep.md": b"keep\n", "new/added.md": b"hi\n"}


def test_symlinks_and_submodules_are_not_files_of_the_snapshot(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(
        repo,
        {
            "docs/real.md": b"real\n",
            "docs/link.md": (SYMLINK, b"real.md"),
            "docs/escape": (SYMLINK, b"../../../etc/passwd"),
            "docs/vendor": (GITLINK, b"0123456789abcdef0123456789abcdef01234567"),
        },
    )

    assert read(url_of(repo), path="docs").files == {"real.md": b"real\n"}


def test_files_at_the_limits_are_read(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"x" * 10, "b.md": b"y", "c/d.md": b""})

    snapshot = read(url_of(repo), max_files=3, max_file_bytes=10)

    assert snapshot.files == {"a.md": b"x" * 10, "b.md": b"y", "c/d.md": b""}


# ---- limits -------------------------------------------------------------------------------------------


def test_more_files_than_the_limit_is_memory_full(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {f"docs/{i:02}.md": b"." for i in range(11)} | {"elsewhere/x.md": b"."})

    assert len(read(url_of(repo), path="docs", max_files=11).files) == 11
    with pytest.raises(ApiError) as error:
        read(url_of(repo), path="docs", max_files=10)
    assert_refusal(error, "memory_full", "docs", "more than 10 files")


def test_a_file_over_the_size_limit_is_too_large_and_named(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {"docs/small.md": b"ok", "docs/sub/big.bin": b"\0" * 101})

    with pytest.raises(ApiError) as error:
        read(url_of(repo), path="docs", max_file_bytes=100)
    assert_refusal(error, "memory_document_too_large", "docs/sub/big.bin", "larger than 100 bytes")
    # Outside the folder read, a large file is not the snapshot's concern.
    assert read(url_of(repo), path="docs/sub", max_file_bytes=101).files == {"big.bin": b"\0" * 101}


def test_a_blob_the_server_filtered_out_counts_as_too_large() -> None:
    # Over https the fetch asks for blob:limit, and a server honouring it leaves large blobs out: a
    # missing blob then is a too-large file. No local transport filters, so the walk is driven directly.
    store = MemoryObjectStore()
    present = Blob.from_string(b"small")
    store.add_object(present)
    absent = Blob.from_string(b"big" * 100)
    tree = Tree()
    tree.add(b"small.md", REGULAR, present.id)
    tree.add(b"big.md", REGULAR, absent.id)
    store.add_object(tree)

    with pytest.raises(ApiError) as error:
        gitsource._collect(
            store, tree.id, "", shown="https://example.com/r", max_files=10, max_file_bytes=5, blobs_filtered=True
        )
    assert_refusal(error, "memory_document_too_large", "big.md")
    with pytest.raises(ApiError) as error:
        gitsource._collect(
            store, tree.id, "", shown="https://example.com/r", max_files=10, max_file_bytes=500, blobs_filtered=False
        )
    assert_refusal(error, "memory_source_unavailable", "damaged", "big.md")


def test_more_pack_data_than_a_sync_downloads_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = bare(tmp_path)
    commit(repo, {f"f{i}.md": f"content {i}\n".encode() * 20 for i in range(50)})
    monkeypatch.setattr(gitsource, "MAX_PACK_BYTES", 200)

    with pytest.raises(ApiError) as error:
        read(url_of(repo))
    assert_refusal(error, "memory_source_unavailable", url_of(repo), "MiB")


def test_a_read_past_its_deadline_is_refused(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"a"})

    with pytest.raises(ApiError) as error:
        read_snapshot(url_of(repo), None, None, file_roots=TMP, timeout_seconds=0)
    assert_refusal(error, "memory_source_unavailable", "did not answer within 0 seconds")


# ---- refusals: the repository, the ref, the folder ----------------------------------------------------


def test_an_unknown_ref_is_refused_by_name(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"a"})

    for name in ("nope", "refs/heads/nope", "refs/tags/nope"):
        with pytest.raises(ApiError) as error:
            read(url_of(repo), ref=name)
        assert_refusal(error, "memory_source_unavailable", f"no branch or tag named {name}")


def test_malformed_refs_and_refs_outside_branches_and_tags_are_refused(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"a"})

    for name in ("a..b", "bad name", "x\n", "-x/..", "ends.lock", "refs/pull/1/head", "refs/remotes/origin/main"):
        with pytest.raises(ApiError) as error:
            read(url_of(repo), ref=name)
        assert_refusal(error, "memory_source_unavailable", "branch")


def test_a_missing_repository_is_refused(tmp_path: Path) -> None:
    for target in (tmp_path / "nowhere", tmp_path):
        with pytest.raises(ApiError) as error:
            read(target.as_uri())
        assert_refusal(error, "memory_source_unavailable", "not a git repository", str(target))


def test_an_empty_repository_has_no_default_branch(tmp_path: Path) -> None:
    repo = bare(tmp_path)

    with pytest.raises(ApiError) as error:
        read(url_of(repo))
    assert_refusal(error, "memory_source_unavailable", "no default branch")


def test_a_detached_head_is_not_a_default_branch(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    sha = commit(repo, {"a.md": b"a"})
    repo.refs.remove_if_equals(Ref(b"HEAD"), None)
    repo.refs[Ref(b"HEAD")] = ObjectID(sha.encode())

    with pytest.raises(ApiError) as error:
        read(url_of(repo))
    assert_refusal(error, "memory_source_unavailable", "name the branch")
    assert read(url_of(repo), ref="main").commit == sha


def test_a_path_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, DOCS)

    with pytest.raises(ApiError) as error:
        read(url_of(repo), path="docs/missing")
    assert_refusal(error, "memory_source_unavailable", "no folder docs/missing")
    with pytest.raises(ApiError) as error:
        read(url_of(repo), path="docs/intro.md")
    assert_refusal(error, "memory_source_unavailable", "docs/intro.md", "a file, not a folder")


@pytest.mark.parametrize(
    "path", ["..", "docs/..", "../etc", "docs//guides", "./docs", "docs\\guides", "do\x00cs", "d\n"]
)
def test_a_path_that_is_not_a_plain_relative_path_is_refused(tmp_path: Path, path: str) -> None:
    repo = bare(tmp_path)
    commit(repo, DOCS)

    with pytest.raises(ApiError) as error:
        read(url_of(repo), path=path)
    assert_refusal(error, "memory_source_unavailable", "folder to read", "plain relative path")


def test_a_tree_entry_named_dot_dot_is_refused(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    blob = Blob.from_string(b"escape")
    inner = Tree()
    inner.add(b"..", REGULAR, blob.id)
    root = Tree()
    root.add(b"docs", 0o040000, inner.id)
    for obj in (blob, inner, root):
        repo.object_store.add_object(obj)
    repo.get_worktree().commit(message=b"hostile", committer=WHO, author=WHO, tree=root.id, ref=Ref(b"refs/heads/main"))

    with pytest.raises(ApiError) as error:
        read(url_of(repo))
    assert_refusal(error, "memory_source_unavailable", "docs/", "not a valid file name")


# ---- refusals: the URL --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("http://example.com/repo.git", "http://"),
        ("ssh://git@example.com/repo.git", "ssh://"),
        ("git://example.com/repo.git", "git://"),
        ("git@example.com:org/repo.git", "SSH address"),
        ("/srv/repo.git", "a bare path"),
        ("", "not a URL"),
        ("https://exa mple.com/r", "not a URL"),
    ],
)
def test_urls_that_are_not_https_are_refused(url: str, named: str) -> None:
    with pytest.raises(ApiError) as error:
        read_snapshot(url, None, None, file_roots=TMP)
    assert_refusal(error, "memory_source_unavailable", named, "https://")


def test_a_file_url_is_refused_when_no_root_is_named(tmp_path: Path) -> None:
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"a"})

    with pytest.raises(ApiError) as error:
        read_snapshot(url_of(repo), None, None, file_roots=())
    assert_refusal(error, "memory_source_unavailable", "file://", "not accepted", "AGENT_MEMORY_GIT_FILE_ROOTS")
    assert read_snapshot(url_of(repo), None, None, file_roots=(str(tmp_path),)).files == {"a.md": b"a"}


def _outside(url: str, roots: tuple[str, ...]) -> None:
    with pytest.raises(ApiError) as error:
        read_snapshot(url, None, None, file_roots=roots)
    assert_refusal(error, "memory_source_unavailable", "resolves outside", "AGENT_MEMORY_GIT_FILE_ROOTS")


def test_a_file_url_outside_every_root_is_refused(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    repo = bare(elsewhere)
    commit(repo, {"a.md": b"a"})
    _outside(url_of(repo), (str(root),))
    # A sibling whose name starts with the root's is not under it
    (tmp_path / "root-two").mkdir()
    sibling = bare(tmp_path / "root-two")
    commit(sibling, {"a.md": b"a"})
    _outside(url_of(sibling), (str(root),))
    # '..' is resolved before the comparison
    _outside(f"file://{root}/../elsewhere/origin.git", (str(root),))
    # Several roots, none holding it
    _outside(url_of(repo), (str(root), str(tmp_path / "root-two")))


def test_a_symbolic_link_inside_a_root_that_leads_out_of_it_is_refused(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    repo = bare(elsewhere)
    commit(repo, {"a.md": b"secret"})
    (root / "link.git").symlink_to(Path(repo.path))
    (root / "dir").symlink_to(elsewhere)
    _outside(f"file://{root}/link.git", (str(root),))
    _outside(f"file://{root}/dir/origin.git", (str(root),))


def test_the_servers_own_folders_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for url in ("file:///proc/self/cwd", "file:///proc/self/root/etc", "file:///", "file:///etc"):
        _outside(url, (str(root),))


def test_a_root_that_is_itself_a_link_holds_what_its_target_holds(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    repo = bare(real)
    commit(repo, {"a.md": b"a"})
    (tmp_path / "alias").symlink_to(real)
    # Named through the link, or reached through it: both resolve inside the root
    assert read_snapshot(url_of(repo), None, None, file_roots=(str(tmp_path / "alias"),)).files == {"a.md": b"a"}
    url = f"file://{tmp_path}/alias/origin.git"
    assert read_snapshot(url, None, None, file_roots=(str(real),)).files == {"a.md": b"a"}


def test_a_file_url_with_a_host_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ApiError) as error:
        read_snapshot(f"file://server{tmp_path}", None, None, file_roots=TMP)
    assert_refusal(error, "memory_source_unavailable", "not a host")


def test_credentials_in_the_url_are_refused_and_never_echoed() -> None:
    for url in ("https://ada:s3cr3t@example.com/org/repo.git", "https://s3cr3t@example.com/org/repo.git"):
        with pytest.raises(ApiError) as error:
            read_snapshot(url, None, None, file_roots=())
        assert_refusal(error, "memory_source_unavailable", "credentials")
        assert "s3cr3t" not in error.value.message


def test_a_query_or_fragment_in_the_url_is_refused() -> None:
    for url in ("https://example.com/r.git?token=s3cr3t", "https://example.com/r.git#main"):
        with pytest.raises(ApiError) as error:
            read_snapshot(url, None, None, file_roots=())
        assert_refusal(error, "memory_source_unavailable", "query or fragment")
        assert "s3cr3t" not in error.value.message


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/r.git",
        "https://127.0.0.1/r.git",
        "https://10.0.0.8/r.git",
        "https://[::1]/r.git",
        "https://169.254.169.254/r.git",
        # The resolver's old IPv4 spellings of 127.0.0.1: refused without asking DNS.
        "https://127.1/r.git",
        "https://2130706433/r.git",
        "https://0x7f000001/r.git",
    ],
)
def test_https_to_this_machine_or_a_private_address_is_refused(url: str) -> None:
    with pytest.raises(ApiError) as error:
        read_snapshot(url, None, None, file_roots=())
    assert_refusal(error, "memory_source_unavailable", "does not read")


def test_an_https_repository_that_cannot_be_reached_is_refused_without_a_trace() -> None:
    # The unit suite blocks sockets, so this goes through dulwich's HTTP client up to the connection.
    url = "https://8.8.8.8/org/repo.git"
    with pytest.raises(ApiError) as error:
        read_snapshot(url, "main", None, file_roots=(), timeout_seconds=5)
    assert_refusal(error, "memory_source_unavailable", url, "could not be")
    assert error.value.__cause__ is None and error.value.__suppress_context__


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/r.git/info/refs?service=git-upload-pack", "not https://"),
        ("https://169.254.169.254/latest/info/refs?service=git-upload-pack", "private"),
        ("https://example.com/r.git/objects/info/packs", "smart HTTP"),
        ("https://example.com/r.git/HEAD", "smart HTTP"),
    ],
)
def test_every_request_dulwich_makes_is_held_to_https_and_the_smart_protocol(url: str, why: str) -> None:
    # urllib3 follows a redirect by calling urlopen again, so this is also what a redirect meets.
    pool = gitsource._GuardedPoolManager(gitsource._Deadline(5))
    with pytest.raises(gitsource._RequestRefused) as error:
        pool.urlopen("GET", url)
    assert why in error.value.reason
