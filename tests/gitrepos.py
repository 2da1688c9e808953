"""Git repositories made in a test, with dulwich (no git binary, no network): what git-synced Memories read."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dulwich.index import commit_tree
from dulwich.objects import Blob, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

REGULAR = 0o100644
EXECUTABLE = 0o100755
SYMLINK = 0o120000
GITLINK = 0o160000
WHO = b"Ada <ada@example.com>"

# A file's content, or (mode, content) for an executable, a symlink (content: its target) or a
# submodule (content: the 40-hex commit it pins).
Content = bytes | tuple[int, bytes]


def commit(repo: Repo, files: Mapping[str, Content], *, branch: str = "main", message: bytes = b"sync") -> str:
    """Commit exactly `files` (the whole tree) on `branch`; answer the commit's sha."""
    entries: list[tuple[bytes, ObjectID, int]] = []
    for path, content in files.items():
        mode, data = content if isinstance(content, tuple) else (REGULAR, content)
        if mode == GITLINK:
            sha = ObjectID(data)
        else:
            blob = Blob.from_string(data)
            repo.object_store.add_object(blob)
            sha = blob.id
        entries.append((path.encode(), sha, mode))
    tree = commit_tree(repo.object_store, entries)
    sha = repo.get_worktree().commit(
        message=message, committer=WHO, author=WHO, tree=tree, ref=Ref(f"refs/heads/{branch}".encode())
    )
    return sha.decode()


def bare(tmp_path: Path, default_branch: str = "main") -> Repo:
    return Repo.init_bare(tmp_path / "origin.git", mkdir=True, default_branch=default_branch.encode())


def url_of(repo: Repo) -> str:
    return Path(repo.path).as_uri()
