"""Read one folder of one commit of a Git repository, for Memories imported from (and re-synced with) Git.

Lambda has no git binary, so this is dulwich (pure-Python Git) end to end. One call does one fetch:

1. The URL is checked before anything touches the network: `https://` always, `file://` only when the
   caller allows it (local runs and tests). Credentials, queries and fragments in the URL are refused,
   because the URL is stored on the Memory and shown back, and a token in it would leak with it.
2. The wanted ref is resolved inside dulwich's `determine_wants` callback, from the refs the server
   advertises (narrowed with protocol v2 `ref-prefix` where the server supports it), so the one round
   trip that lists refs also asks for the commit. The default branch is the `HEAD` symref the same
   answer carries.
3. Exactly that commit is fetched with `depth=1` into a `MemoryObjectStore`: no history, no other
   branches, and nothing on disk beyond the pack's spool file (a SpooledTemporaryFile, in memory up to
   16 MiB), which a `with` closes, and so deletes, on every path. The same fetch serves file:// (dulwich's
   LocalGitClient), so the tests drive the code a remote read runs.
   Over https the fetch also asks for `blob:limit` filtering, so a server that supports it leaves out
   blobs too large to import instead of sending them; a missing blob then means exactly that.
4. The tree is walked under the folder, iteratively, with the file count and per-file size checked as it
   goes, so a hostile tree costs at most `max_files` blobs of work past the fetch.

The work is bounded by a deadline (checked before each HTTP request, on every chunk of pack data, and
given to urllib3 as the socket timeout), a cap on the pack bytes received (MAX_PACK_BYTES), an https-only,
smart-protocol-only guard on every request dulwich makes, redirects included. The dumb HTTP protocol
is refused because dulwich's dumb client downloads object by object into memory before any of the
limits here can see it. What is not bounded here: a host name that resolves to a private address (only
literal addresses are refused; names are not resolved twice), a server dripping its ref advertisement
(each read still times out), and proxies (https_proxy is not honoured: the pool is built here).

Everything that goes wrong becomes an `ApiError` with a sentence that names the repository without
credentials; nothing from a server's answer is echoed, since it is the remote's text, not ours. This
module decodes no bytes: whether a file is text is the caller's decision.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
import time
from collections.abc import Mapping
from tempfile import SpooledTemporaryFile
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, unquote, urlsplit

import urllib3
import urllib3.exceptions
from dulwich.client import (
    GitClient,
    HTTPProxyUnauthorized,
    HTTPUnauthorized,
    LocalGitClient,
    default_user_agent_string,
    get_transport_and_path,
)
from dulwich.errors import NotGitRepository
from dulwich.object_store import BaseObjectStore, MemoryObjectStore, ObjectStoreGraphWalker
from dulwich.objects import S_ISGITLINK, Blob, Commit, ObjectID, Tag, Tree
from dulwich.pack import PACK_SPOOL_FILE_MAX_SIZE
from dulwich.refs import HEADREF, LOCAL_BRANCH_PREFIX, LOCAL_TAG_PREFIX, Ref, check_ref_format

from agent_memory.api.errors import ApiError
from agent_memory.core import observability
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.settings import GIT_FILE_ROOTS as FILE_ROOTS_SETTING

if TYPE_CHECKING:
    from dulwich.client import DetermineWantsFunc

# The most pack data one read accepts. The pack holds the whole tree of the commit, not only the
# folder asked for, so this bounds the Lambda's memory whatever the repository's size.
MAX_PACK_BYTES = 100 * 1024 * 1024

# Longer URLs, paths and refs than these are not repositories anyone means to import.
_MAX_URL_CHARS = 2048
_MAX_PATH_CHARS = 1024
_MAX_REF_CHARS = 255
# A renamed repository answers with a redirect or two; more is a loop.
_MAX_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class GitSnapshot:
    url: str
    # The branch actually read (its short name, e.g. "main"), or a tag as "refs/tags/<name>": either
    # way a name that, passed back as `ref`, reads the same ref again.
    ref: str
    # The folder read, "" for the whole tree, without leading or trailing "/".
    path: str
    commit: str
    # Every regular file under `path`, keyed by its posix path relative to `path`, keys sorted.
    files: dict[str, bytes]


def read_snapshot(
    url: str,
    ref: str | None,
    path: str | None,
    *,
    file_roots: tuple[str, ...] = (),
    max_files: int = 1000,
    max_file_bytes: int = 1024 * 1024,
    timeout_seconds: float = 20.0,
) -> GitSnapshot:
    """Read the files under `path` at the tip of `ref` (the default branch when None) of the repository at `url`.

    Refuses with `memory_source_unavailable` (bad URL, unreadable repository, unknown ref, path not a
    folder), `memory_full` (more than `max_files` files) or `memory_document_too_large` (a file over
    `max_file_bytes`).
    """
    folder = _normalise_folder(path)
    wanted = _parse_ref(ref)
    deadline = _Deadline(timeout_seconds)
    client, remote_path, shown, filtering = _open(url, file_roots, deadline)
    filter_spec = f"blob:limit={max_file_bytes + 1}".encode() if filtering else None

    chosen: list[tuple[Ref, ObjectID]] = []

    # Called by dulwich with the advertised refs; what it returns is all that gets fetched.
    def determine_wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        deadline.check()
        for name in wanted or (HEADREF,):
            sha = refs.get(name)
            if sha is not None:
                chosen.append((name, sha))
                return [sha]
        if wanted is None:
            raise ApiError(
                "memory_source_unavailable",
                f"The repository at {shown} has no default branch (its HEAD names no commit): name the branch to read.",
            )
        raise ApiError(
            "memory_source_unavailable",
            f"The repository at {shown} has no branch or tag named {ref}.",
        )

    store = MemoryObjectStore()
    try:
        symrefs = _fetch(
            client,
            remote_path,
            store,
            determine_wants,
            ref_prefix=wanted or [HEADREF],
            deadline=deadline,
            filter_spec=filter_spec,
        )
    except ApiError:
        raise
    except Exception as exc:
        # The remote is untrusted input to a parser: whatever dulwich raises on its answer is the
        # repository being unreadable, never a fault to show as a stack trace. The log keeps the
        # exception's kind (not its text, which is the server's) for whoever debugs a failing sync.
        observability.logger().warning("git source unreadable", extra={"source": shown, "error": _kinds(exc)})
        raise ApiError(
            "memory_source_unavailable", f"The repository at {shown} {_why_unreadable(exc, timeout_seconds)}."
        ) from None
    if not chosen:
        # dulwich returns without asking only when the server advertised nothing to ask from.
        raise ApiError("memory_source_unavailable", f"The repository at {shown} offered no refs to read.")
    name, sha = chosen[0]
    if wanted is None:
        target = symrefs.get(HEADREF)
        if target is None or not target.startswith(LOCAL_BRANCH_PREFIX):
            raise ApiError(
                "memory_source_unavailable",
                f"The repository at {shown} does not say which branch is its default: name the branch to read.",
            )
        name = target
    commit = _peel(store, sha, shown)
    files = _collect(
        store,
        commit.tree,
        folder,
        shown=shown,
        max_files=max_files,
        max_file_bytes=max_file_bytes,
        blobs_filtered=filter_spec is not None,
    )
    return GitSnapshot(
        url=url,
        ref=_display_ref(name),
        path=folder,
        commit=commit.id.decode("ascii"),
        files=files,
    )


class _TimedOut(Exception):
    pass


class _PackTooLarge(Exception):
    pass


class _RequestRefused(Exception):
    """A request dulwich was about to make that leaves what a sync may reach."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + max(seconds, 0.0)

    def remaining(self) -> float:
        return self._at - time.monotonic()

    def check(self) -> float:
        left = self.remaining()
        if left <= 0:
            raise _TimedOut
        return left


class _GuardedPoolManager(urllib3.PoolManager):
    """The pool dulwich's HTTP client sends through: every request, redirects included, passes here.

    urllib3 follows a redirect by calling `urlopen` again with the new URL, so checking the URL here
    is what stops a redirect to http://, to a private address, or away from the smart protocol.
    """

    def __init__(self, deadline: _Deadline) -> None:
        super().__init__(
            headers={"User-agent": default_user_agent_string()},
            cert_reqs="CERT_REQUIRED",
            # A retry would restart the clock per attempt; the deadline is for the whole read.
            retries=urllib3.Retry(total=_MAX_REDIRECTS, connect=0, read=0, status=0, other=0, redirect=_MAX_REDIRECTS),
        )
        self._deadline = deadline

    # The same override (and the same ignore) as urllib3's own PoolManager.urlopen.
    def urlopen(  # type: ignore[override]
        self, method: str, url: str, redirect: bool = True, **kw: Any
    ) -> urllib3.BaseHTTPResponse:
        parts = urlsplit(url)
        if parts.scheme != "https":
            raise _RequestRefused("redirected to an address that is not https://")
        problem = _host_problem(parts)
        if problem:
            raise _RequestRefused(f"redirected to {problem}")
        smart = (parts.path.endswith("/info/refs") and parts.query == "service=git-upload-pack") or (
            parts.path.endswith("/git-upload-pack") and not parts.query
        )
        if not smart:
            raise _RequestRefused("does not speak Git's smart HTTP protocol (only that one is read)")
        left = self._deadline.check()
        kw["timeout"] = urllib3.Timeout(connect=left, read=left)
        return super().urlopen(method, url, redirect=redirect, **kw)


def _open(url: str, file_roots: tuple[str, ...], deadline: _Deadline) -> tuple[GitClient, str, str, bool]:
    """The client, the path to give it, the URL as messages show it, and whether blob filtering applies."""

    def refuse(sentence: str) -> ApiError:
        return ApiError("memory_source_unavailable", sentence)

    accepted = "an https:// URL" + (
        f" or a file:// URL under a folder {FILE_ROOTS_SETTING} names" if file_roots else ""
    )
    if not url or len(url) > _MAX_URL_CHARS or _has_control(url) or " " in url:
        raise refuse(f"The repository URL is not a URL this service reads: give {accepted}.")
    try:
        parts = urlsplit(url)
        # Reading .port validates it; a bad one raises here rather than deep in urllib3.
        _ = parts.port
    except ValueError:
        raise refuse(f"The repository URL cannot be parsed: give {accepted}.") from None
    scheme = parts.scheme.lower()
    if scheme == "file" and not file_roots:
        raise refuse(
            f"A file:// repository URL is not accepted here: {FILE_ROOTS_SETTING} names no folder to read "
            "repositories from, so give an https:// URL."
        )
    if scheme not in ("https", "file"):
        if scheme:
            shown_scheme = f"{scheme}://"
        elif ":" in url.split("/", 1)[0]:
            shown_scheme = "an SSH address (host:path)"
        else:
            shown_scheme = "a bare path"
        raise refuse(f"The repository URL uses {shown_scheme}, which this service does not read: give {accepted}.")
    if "@" in parts.netloc:
        # Checked before the URL is echoed anywhere: the message must not carry the secret either.
        raise refuse(
            "The repository URL carries credentials (user:password@ or a token before the host); "
            "give the public URL without them."
        )
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise refuse("The repository URL carries a query or fragment; give the repository's URL without it.")

    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise refuse("A file:// repository URL names a local path, not a host: write file:///path/to/repo.")
        local = unquote(parts.path)
        if not local.startswith("/"):
            raise refuse("A file:// repository URL needs an absolute path: write file:///path/to/repo.")
        inside = _under_a_root(local, file_roots)
        if inside is None:
            raise refuse(
                f"The repository URL file://{local[:200]} resolves outside the folders {FILE_ROOTS_SETTING} "
                "names (symbolic links and '..' are followed first): put the repository under one of them."
            )
        # The resolved path is what is opened, so a link changed after this check reads nothing new.
        return LocalGitClient(quiet=True), inside, f"file://{local}", False

    problem = _host_problem(parts)
    if problem:
        raise refuse(f"The repository URL points at {problem}, which this service does not read.")
    shown = f"https://{parts.netloc}{parts.path}"
    client, remote_path = get_transport_and_path(url, quiet=True, pool_manager=_GuardedPoolManager(deadline))
    return client, remote_path, shown, True


def _under_a_root(local: str, roots: tuple[str, ...]) -> str | None:
    """The real path of `local` (every symbolic link, `..` and /proc/self link resolved) when it lies in
    one of `roots` (each resolved too), else None."""
    try:
        real = os.path.realpath(local, strict=False)
    except (OSError, ValueError):
        return None
    for root in roots:
        try:
            top = os.path.realpath(root, strict=False)
        except (OSError, ValueError):
            continue
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return real
    return None


def _host_problem(parts: SplitResult) -> str | None:
    """Why a host is out of reach of a sync, or None. Literal addresses only: names are not resolved."""
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return "no host"
    if host == "localhost" or host.endswith(".localhost"):
        return "this machine"
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:
            # The resolver also takes the old spellings of IPv4 (127.1, 2130706433, 0x7f000001).
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    if not address.is_global:
        return "a private, loopback or link-local address"
    return None


def _fetch(
    client: GitClient,
    remote_path: str,
    store: MemoryObjectStore,
    determine_wants: DetermineWantsFunc,
    *,
    ref_prefix: list[Ref],
    deadline: _Deadline,
    filter_spec: bytes | None,
) -> Mapping[Ref, Ref]:
    """Fetch what `determine_wants` asks for, depth 1, into `store`; answer the remote's symrefs."""
    received = 0
    # What GitClient.fetch does, with the limits in the write: the pack is spooled (in memory up to
    # dulwich's spool size, then a temporary file that closing deletes) and ingested once complete.
    with SpooledTemporaryFile(max_size=PACK_SPOOL_FILE_MAX_SIZE, prefix="gitsource-") as spool:

        def write(data: bytes) -> int:
            nonlocal received
            received += len(data)
            if received > MAX_PACK_BYTES:
                raise _PackTooLarge
            # Checked per chunk because the socket timeout alone lets a server drip bytes forever.
            deadline.check()
            return spool.write(data)

        result = client.fetch_pack(
            remote_path,
            determine_wants,
            # No local heads: nothing to negotiate, the server sends the commit and its tree whole.
            ObjectStoreGraphWalker([], lambda _sha: []),
            write,
            depth=1,
            ref_prefix=ref_prefix,
            filter_spec=filter_spec,
        )
        if spool.tell():
            spool.seek(0)
            # A thin pack: servers may insist on sending one (dulwich's own does). With no objects
            # on our side and depth 1 it can hold no delta against an object we lack, and
            # add_thin_pack takes a self-contained pack just the same.
            store.add_thin_pack(spool.read, None)
    return result.symrefs


def _peel(store: BaseObjectStore, sha: ObjectID, shown: str) -> Commit:
    try:
        obj = store[sha]
        # A tag may point at a tag; a loop of tags is impossible (ids are hashes) but a long chain is not.
        for _ in range(16):
            if not isinstance(obj, Tag):
                break
            obj = store[obj.object[1]]
    except KeyError:
        raise ApiError(
            "memory_source_unavailable",
            f"The repository at {shown} did not send the commit it advertised: it is incomplete or damaged.",
        ) from None
    if not isinstance(obj, Commit):
        raise ApiError(
            "memory_source_unavailable",
            f"The ref read from the repository at {shown} points at a {obj.type_name.decode()}, not at a commit.",
        )
    return obj


def _collect(
    store: BaseObjectStore,
    root: ObjectID,
    folder: str,
    *,
    shown: str,
    max_files: int,
    max_file_bytes: int,
    blobs_filtered: bool,
) -> dict[str, bytes]:
    """Every regular file under `folder` of the tree `root`, keyed relative to `folder`."""

    def damaged(what: str) -> ApiError:
        return ApiError("memory_source_unavailable", f"The repository at {shown} is incomplete or damaged: {what}.")

    def tree_at(sha: ObjectID, where: str) -> Tree:
        try:
            obj = store[sha]
        except KeyError:
            raise damaged(f"the folder {where or '/'} is missing") from None
        if not isinstance(obj, Tree):
            raise damaged(f"{where or '/'} is marked a folder but is not one")
        return obj

    tree = tree_at(root, "")
    walked = ""
    for segment in folder.split("/") if folder else []:
        walked = f"{walked}/{segment}" if walked else segment
        try:
            mode, sha = tree[segment.encode("utf-8")]
        except KeyError:
            raise ApiError(
                "memory_source_unavailable", f"The repository at {shown} has no folder {walked} in that commit."
            ) from None
        if not stat.S_ISDIR(mode):
            raise ApiError(
                "memory_source_unavailable",
                f"{walked} in the repository at {shown} is a file, not a folder.",
            )
        tree = tree_at(sha, walked)

    files: dict[str, bytes] = {}
    # Iterative on purpose: nesting depth is the repository author's choice, not ours.
    pending: list[tuple[str, Tree]] = [("", tree)]
    while pending:
        prefix, current = pending.pop()
        for entry in current.iteritems():
            name = _entry_name(entry.path, prefix, folder, shown)
            relative = f"{prefix}{name}"
            full = f"{folder}/{relative}" if folder else relative
            mode = entry.mode
            if S_ISGITLINK(mode) or stat.S_ISLNK(mode):
                # A submodule is another repository's commit and a symlink is a path, not content:
                # neither is a file of the snapshot.
                continue
            if stat.S_ISDIR(mode):
                pending.append((f"{relative}/", tree_at(entry.sha, full)))
                continue
            if not stat.S_ISREG(mode):
                continue
            if relative in files:
                raise damaged(f"{full} appears twice")
            if len(files) >= max_files:
                raise ApiError(
                    "memory_full",
                    f"The folder {folder or '/'} of the repository at {shown} holds more than {max_files} files, "
                    "more than one Memory takes: import a smaller folder.",
                )
            try:
                blob = store[entry.sha]
            except KeyError:
                if blobs_filtered:
                    # Asked the server to leave out blobs over the limit: a missing one is one of those.
                    raise _too_large(full, shown, max_file_bytes) from None
                raise damaged(f"the file {full} is missing") from None
            if not isinstance(blob, Blob):
                raise damaged(f"{full} is marked a file but is not one")
            if blob.raw_length() > max_file_bytes:
                raise _too_large(full, shown, max_file_bytes)
            files[relative] = blob.as_raw_string()
    return dict(sorted(files.items()))


def _too_large(full: str, shown: str, max_file_bytes: int) -> ApiError:
    return ApiError(
        "memory_document_too_large",
        f"The file {full} in the repository at {shown} is larger than {max_file_bytes} bytes, "
        "more than a Memory document may hold.",
    )


def _entry_name(raw: bytes, prefix: str, folder: str, shown: str) -> str:
    # Tree entry names are the repository author's bytes. Ones that would not survive as a path
    # segment (or that `path` itself refuses) make the snapshot's keys ambiguous or escaping.
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        name = ""
    if not _segment_ok(name):
        where = f"{folder}/{prefix}" if folder else prefix
        raise ApiError(
            "memory_source_unavailable",
            f"The repository at {shown} holds an entry under {where or '/'} whose name {raw!r} is not a "
            "valid file name (UTF-8, no '/', '\\', control characters, '.' or '..').",
        )
    return name


def _segment_ok(segment: str) -> bool:
    return (
        bool(segment)
        and segment not in (".", "..")
        and "/" not in segment
        and "\\" not in segment
        and not (_has_control(segment))
    )


def _has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


def _normalise_folder(path: str | None) -> str:
    if path is None:
        return ""
    if len(path) > _MAX_PATH_CHARS:
        raise ApiError("memory_source_unavailable", "The folder to read is not a path of at most 1024 characters.")
    trimmed = path.strip("/")
    if not trimmed:
        return ""
    if not all(_segment_ok(segment) for segment in trimmed.split("/")):
        raise ApiError(
            "memory_source_unavailable",
            f"The folder to read, {path!r}, is not a plain relative path: it must not hold '..', '.', empty "
            "segments, backslashes or control characters.",
        )
    return trimmed


def _parse_ref(ref: str | None) -> list[Ref] | None:
    """The full ref names to try in order, or None for the default branch."""
    if ref is None or ref == "":
        return None
    problem = ApiError("memory_source_unavailable", f"{ref[:_MAX_REF_CHARS]!r} is not a valid branch or tag name.")
    if len(ref) > _MAX_REF_CHARS or _has_control(ref):
        raise problem
    raw = ref.encode("utf-8")
    if raw.startswith(b"refs/"):
        if not raw.startswith((LOCAL_BRANCH_PREFIX, LOCAL_TAG_PREFIX)):
            raise ApiError(
                "memory_source_unavailable",
                f"{ref!r} is neither a branch (refs/heads/...) nor a tag (refs/tags/...); only those are read.",
            )
        candidates = [Ref(raw)]
    else:
        # A branch before a tag of the same name: syncing follows a branch, and a tag is the exception.
        candidates = [Ref(LOCAL_BRANCH_PREFIX + raw), Ref(LOCAL_TAG_PREFIX + raw)]
    if not all(check_ref_format(candidate) for candidate in candidates):
        raise problem
    return candidates


def _display_ref(name: Ref) -> str:
    text = name.decode("utf-8", "replace")
    return text.removeprefix(LOCAL_BRANCH_PREFIX.decode())


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it wraps, outermost first.

    dulwich wraps urllib3's errors as GitProtocolError(str(e)) from e, and urllib3 wraps its own in
    MaxRetryError(reason=...): the innermost cause says what happened.
    """
    causes: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(causes) < 8:
        causes.append(cause)
        reason = getattr(cause, "reason", None)
        cause = reason if isinstance(reason, BaseException) else cause.__cause__
    return causes


def _kinds(exc: BaseException) -> str:
    return " <- ".join(type(c).__name__ for c in _causes(exc))


def _why_unreadable(exc: BaseException, timeout_seconds: float) -> str:
    """The end of the sentence "The repository at <url> ...": what went wrong, in words."""
    causes = _causes(exc)

    def seen(*kinds: type[BaseException]) -> bool:
        return any(isinstance(c, kinds) for c in causes)

    refused = next((c for c in causes if isinstance(c, _RequestRefused)), None)
    if refused is not None:
        return refused.reason
    if seen(_PackTooLarge):
        return f"sent more than {MAX_PACK_BYTES // (1024 * 1024)} MiB for one commit, more than a sync downloads"
    if seen(NotGitRepository):
        return "is not a Git repository (or does not exist)"
    if seen(HTTPUnauthorized, HTTPProxyUnauthorized):
        # GitHub answers 401 for a repository that does not exist too, so as not to reveal private ones.
        return "asks for credentials (it is private, or does not exist); only public repositories can be read"
    # Before the timeouts: urllib3's NewConnectionError (so NameResolutionError too) is a TimeoutError.
    if seen(urllib3.exceptions.NewConnectionError):
        return "could not be reached"
    if seen(_TimedOut, urllib3.exceptions.TimeoutError):
        return f"did not answer within {timeout_seconds:g} seconds"
    if seen(urllib3.exceptions.SSLError):
        return "could not be reached over a verified TLS connection"
    return "could not be read (the server's answer was refused or broke off)"
