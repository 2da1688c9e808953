"""Claude's memory tool (`memory_20250818`) over an execution's file tree, with no dependency of its own.

The tool's six commands (view, create, str_replace, insert, delete, rename) name paths under `/memories`.
They map onto the execution's session files (`POST /executions/{e}/files/...`, `client.SessionFiles`):

- `/memories` lists the execution's roots as folders (`conversation/`, `workspace/`, `agent/`, ...), and the
  folders its Memory mounts lie in (`workspace/runbooks/`, `memory/<name>/`);
- `/memories/<root>/<rest>` is the root's document `<root>/<rest>` (`/memories/conversation/notes.md`);
- `/memories/<mount path>/<rest>` is a file of a mounted Memory (`/memories/workspace/runbooks/deploy.md` is
  `/workspace/runbooks/deploy.md`). A mount wins over the root of the same name, as a mount hides the
  folder it is mounted on: the workspace root's `runbooks/...` documents are not reachable here while a
  Memory is mounted at `/workspace/runbooks`. The server's own `/memory/agent` and `/memory/user` mounts are
  the agent/ and user/ roots, reached as roots.

Every change is the service's conditional write on the pair read in the same command, so nothing another
writer did in between is overwritten unknowingly:

- `view` of a file shows it with line numbers (and `view_range`); of a folder, lists two levels deep.
- `create` writes on null/null: it makes a file only where there is none, and refuses an existing one with
  the reference's `File ... already exists` (change a file with str_replace or insert, or delete it first).
- `str_replace` is the service's edit (the passage must occur exactly once; its not-found and ambiguous
  refusals read as the SDK's own messages).
- `insert` reads, splices the line in and writes on the pair it read (a moved pair refuses it).
- `delete` deletes on the pair read (a folder: each file under it, one by one).
- `rename` is one transaction (`files/rename`): the new path is created, the old one deleted, no bytes move.

Results and refusals are the texts the SDK's own reference implementation (`BetaLocalFilesystemMemoryTool`)
answers, so a model sees what it was trained on; refusals the filesystem has no word for (a read-only root,
a full scope, a quarantined file) say what the service said. Refusals of the call itself (a bad token, an
unknown or stopped execution) are raised as the client's exceptions: they are the runtime's to handle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from agent_memory.api.errors import CALL_REFUSALS

from agent_memory_sdk.client import (
    NEW,
    AlreadyExists,
    MemoryApiError,
    MemoryConnectionError,
    MemoryEditAmbiguous,
    MemoryEditNotFound,
    MemoryNotFound,
    MemoryPathInvalid,
    MemoryReadOnly,
    MemoryScopeUnavailable,
    SessionFiles,
    StaleObject,
)

PREFIX = "/memories"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))

T = TypeVar("T")
Pair = tuple[str | None, int | None]


class CommandError(Exception):
    """A command's refusal, as the text the model reads."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def format_size(n: int) -> str:
    """A size as the SDK's reference implementation prints it: 0B, 512B, 1.5K, 2M."""
    if n == 0:
        return "0B"
    sizes = ["B", "K", "M", "G"]
    i = min((n.bit_length() - 1) // 10, len(sizes) - 1)
    size = n / (1024**i)
    return f"{int(size)}{sizes[i]}" if size == int(size) else f"{size:.1f}{sizes[i]}"


def split_lines(content: str) -> list[str]:
    """Lines split on LF only (keeping any CR), without the empty tail a trailing newline leaves."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{str(i + first).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


def _pair(f: Mapping[str, Any]) -> Pair:
    return str(f["public_id"]), int(f["lock_version"])


class MemoryCommands:
    """The six commands against one execution's session files. Mounts and roots are frozen for an
    execution's life, so they are read once."""

    def __init__(self, files: SessionFiles) -> None:
        self.files = files
        self._mounts: dict[str, str] | None = None  # path -> mode
        self._roots: dict[str, str] | None = None  # name -> access

    # ---- the tool's input as JSON (the MCP server's `memory` tool) -----------------------------------

    def run(self, command: Mapping[str, Any]) -> str:
        """One command given as the tool's JSON input: {"command": "view", "path": ...}."""
        name = command.get("command")
        if name not in COMMANDS:
            raise CommandError(f"Unknown command {str(name)[:40]!r}: the commands are {', '.join(COMMANDS)}.")

        def arg(key: str, kind: type[T]) -> T:
            value = command.get(key)
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
                raise CommandError(f"Missing or invalid `{key}` for the {name} command: it must be a {kind.__name__}.")
            return value

        if name == "view":
            vr = command.get("view_range")
            if vr is not None and (not isinstance(vr, list) or not all(type(x) is int for x in vr)):
                raise CommandError("Invalid `view_range`: it must be a list of two line numbers, such as [1, 20].")
            return self.view(arg("path", str), vr)
        if name == "create":
            return self.create(arg("path", str), arg("file_text", str))
        if name == "str_replace":
            return self.str_replace(arg("path", str), arg("old_str", str), arg("new_str", str))
        if name == "insert":
            return self.insert(arg("path", str), arg("insert_line", int), arg("insert_text", str))
        if name == "delete":
            return self.delete(arg("path", str))
        return self.rename(arg("old_path", str), arg("new_path", str))

    # ---- paths -----------------------------------------------------------------------------------

    def mounts(self) -> list[str]:
        """The paths of the execution's Memory mounts (agent/ and user/ mounts are their roots)."""
        return list(self._mount_modes())

    def _mount_modes(self) -> dict[str, str]:
        if self._mounts is None:
            listed = self._service(self.files.mounts, PREFIX)
            self._mounts = {str(m["path"]): str(m["mode"]) for m in listed if m["kind"] == "memory"}
        return self._mounts

    def _mount_of(self, absolute: str) -> str | None:
        held = [m for m in self.mounts() if absolute == m or absolute.startswith(m + "/")]
        return max(held, key=len) if held else None

    def service_path(self, path: str) -> str | None:
        """The session path a tool path names (None: `/memories` itself)."""
        if not isinstance(path, str) or not (path == PREFIX or path.startswith(PREFIX + "/")):
            raise CommandError(f"Path must start with /memories, got: {path}")
        rel = path[len(PREFIX) :].strip("/")
        if any(seg in (".", "..") for seg in rel.split("/")):
            raise CommandError(f"Path {path} would escape /memories directory")
        if not rel:
            return None
        return "/" + rel if self._mount_of("/" + rel) is not None else rel

    def _file(self, path: str, *, creating: bool = False) -> str:
        """The session path of a file a command changes; a path that cannot be one is refused in the
        reference's words (a folder `already exists` to create, `is not a file` to edit)."""
        sp = self.service_path(path)
        if sp is not None and self._top_level(sp):
            if not creating:
                raise CommandError(f"The path {path} does not exist. Please provide a valid path.")
            # /memories itself holds folders only (the roots and the mounts' folders), never a file.
            folders = sorted({*self.roots(), *(m.strip("/").split("/", 1)[0] for m in self.mounts())})
            writable = [r for r in folders if self._root_access().get(r) == "read_write"] or folders or ["<folder>"]
            raise CommandError(
                f"The path {path} is not inside a folder: /memories holds only the folders "
                f"{', '.join(f'{PREFIX}/{r}/' for r in folders) or '(none in this session)'}, and files go in "
                f"them, such as {PREFIX}/{writable[0]}/{sp}."
            )
        if sp is None or self._is_folder(sp):
            raise CommandError(f"File {path} already exists" if creating else f"The path {path} is not a file.")
        return sp

    def _top_level(self, sp: str) -> bool:
        """A name directly under /memories that is no root and no mount's folder: no file can be there."""
        return "/" not in sp and sp not in self.roots() and not self._is_mount_folder(sp)

    def _is_mount_folder(self, sp: str) -> bool:
        at = "/" + sp.strip("/")
        return any(m == at or m.startswith(at + "/") for m in self.mounts())

    def _is_folder(self, sp: str) -> bool:
        """A path that can only be a folder: a root, a mount, or a folder that mounts lie in."""
        if "/" not in sp.strip("/"):
            return True
        at = "/" + sp.strip("/")
        return any(m == at or m.startswith(at + "/") for m in self.mounts())

    # ---- the service, and its refusals in the tool's words ----------------------------------------

    def _service(self, call: Callable[[], T], path: str) -> T:
        try:
            return call()
        except MemoryConnectionError as err:
            applied = " It may have been applied: view the path before trying again." if err.may_have_applied else ""
            raise CommandError(f"The memory service did not answer: {err}.{applied}") from err
        except MemoryApiError as err:
            if err.code in CALL_REFUSALS:
                raise
            raise self._refusal(err, path) from err

    def _refusal(self, err: MemoryApiError, path: str) -> CommandError:
        if isinstance(err, MemoryNotFound):
            return CommandError(f"The path {path} does not exist. Please provide a valid path.")
        if isinstance(err, MemoryScopeUnavailable):
            return CommandError(f"The path {path} does not exist. Please provide a valid path. ({err.message})")
        if isinstance(err, MemoryReadOnly):
            return CommandError(f"The path {path} is read-only in this session: {self._why_read_only(path)}")
        if isinstance(err, MemoryPathInvalid):
            return CommandError(f"Invalid path {path}: {err.message}")
        if err.code == "memory_quarantined":
            return CommandError(
                f"The file {path} is waiting for a person's review and cannot be read or changed: carry on without it."
            )
        return CommandError(f"{err.message} ({err.code})")

    def _why_read_only(self, path: str) -> str:
        """Which mount or root holds a read-only path, said once (the service's own sentence repeats what the
        first half already says)."""
        try:
            sp = self.service_path(path)
        except CommandError:
            sp = None
        mount = None if sp is None else self._mount_of("/" + sp.lstrip("/"))
        if mount is not None:
            return f"the Memory mounted at {mount} is mounted read-only."
        if sp is not None:
            return f"the {sp.strip('/').split('/', 1)[0]}/ root is bound read-only."
        return "it cannot be changed."

    def _show(self, sp: str, path: str) -> dict[str, Any] | None:
        """The file at a session path with its text and pair, or None when there is none."""
        try:
            f = self.files.show(sp)
        except (MemoryNotFound, MemoryPathInvalid):
            return None
        except MemoryApiError as err:
            if err.code in CALL_REFUSALS:
                raise
            raise self._refusal(err, path) from err
        except MemoryConnectionError as err:
            raise CommandError(f"The memory service did not answer: {err}.") from err
        q = f.get("quarantine")
        if isinstance(q, Mapping) and q.get("status") != "released":
            raise CommandError(
                f"The file {path} is waiting for a person's review and cannot be read or changed: carry on without it."
            )
        return f

    def _listed(self, sp: str | None) -> list[tuple[str, int]]:
        """(session path, bytes) of every file at or under a session folder; [] where none can be."""
        query = "" if sp is None else sp
        try:
            answer = self.files.listing(query)
        except (MemoryScopeUnavailable, MemoryPathInvalid):
            return []
        except MemoryApiError as err:
            if err.code in CALL_REFUSALS:
                raise
            raise self._refusal(err, PREFIX if sp is None else f"{PREFIX}/{sp.lstrip('/')}") from err
        if sp is None:
            self._roots = {str(r["root"]).rstrip("/"): str(r["access"]) for r in answer.get("roots", [])}
        rows = [(str(f["path"]), int(f["bytesize"])) for f in answer["files"]]
        if sp is not None:
            rows = [(p, n) for p, n in rows if p.startswith(sp.rstrip("/") + "/")]
        if not (sp or "").startswith("/"):
            # A root's documents under a folder a Memory is mounted on are hidden by the mount.
            rows = [(p, n) for p, n in rows if self._mount_of("/" + p) is None]
        return rows

    def roots(self) -> list[str]:
        return list(self._root_access())

    def _root_access(self) -> dict[str, str]:
        if self._roots is None:
            self._listed(None)
        return self._roots or {}

    def _writable(self, sp: str) -> bool:
        """Whether the session may change a path, as the execution's mounts and roots say (the service
        judges every change; this only tells which side of a refused rename it was about)."""
        mount = self._mount_of(sp)
        if mount is not None:
            return self._mount_modes()[mount] == "readwrite"
        return self._root_access().get(sp.strip("/").split("/", 1)[0]) == "read_write"

    # ---- the commands ------------------------------------------------------------------------------

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        sp = self.service_path(path)
        shown = path.rstrip("/") or PREFIX
        if sp is not None and not self._is_folder(sp):
            f = self._show(sp, shown)
            if f is not None:
                return self._file_text(shown, str(f.get("content", "")), view_range)
        return self._folder(shown, sp)

    @staticmethod
    def _file_text(shown: str, content: str, view_range: list[int] | None) -> str:
        lines = content.split("\n")
        if len(lines) > MAX_LINES:
            raise CommandError(f"File {shown} exceeds maximum line limit of 999,999 lines.")
        first = 1
        if view_range and len(view_range) == 2:
            start = max(1, view_range[0]) - 1
            end = len(lines) if view_range[1] == -1 else view_range[1]
            lines, first = lines[start:end], start + 1
        return f"Here's the content of {shown} with line numbers:\n" + numbered(lines, first)

    def _folder(self, shown: str, sp: str | None) -> str:
        rows = self._listed(sp)
        base = "" if sp is None else sp.strip("/")
        files = {p.strip("/")[len(base) :].lstrip("/") if base else p.strip("/"): n for p, n in rows}
        folders = set(self.roots()) if sp is None else set()
        for m in self.mounts():
            inner = m.strip("/")
            if not base:
                folders.add(inner)
            elif inner.startswith(base + "/"):
                folders.add(inner[len(base) + 1 :])
        exists = sp is None or bool(files) or bool(folders) or base == (self._mount_of("/" + base) or "").strip("/")
        if sp is not None and "/" not in sp and sp in self.roots():
            exists = True
        if not exists:
            raise CommandError(f"The path {shown} does not exist. Please provide a valid path.")
        return render_folder(shown, files, folders)

    def create(self, path: str, file_text: str) -> str:
        sp = self._file(path, creating=True)
        if self._listed(sp):
            # Files lie under this path: it is a folder, which the reference's create refuses as existing
            # (the service would let a file share a folder's name, and views would then show only the file).
            raise CommandError(f"File {path} already exists")
        try:
            # Only while the path is absent (null/null), as the reference's O_EXCL create: a model that means
            # to change a file it has not read is told so, and nothing anyone wrote is replaced.
            self.files.write(sp, file_text, NEW)
        except (AlreadyExists, StaleObject):
            raise CommandError(f"File {path} already exists") from None
        except (MemoryApiError, MemoryConnectionError) as err:
            self._service(_raiser(err), path)
        return f"File created successfully at: {path}"

    def _existing(self, sp: str, path: str) -> dict[str, Any]:
        f = self._show(sp, path)
        if f is None:
            if self._listed(sp):
                raise CommandError(f"The path {path} is not a file.")
            raise CommandError(f"The path {path} does not exist. Please provide a valid path.")
        return f

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        sp = self._file(path)
        for attempt in (0, 1):
            f = self._existing(sp, path)
            content = str(f.get("content", ""))
            try:
                edited = self.files.edit(sp, old_str, new_str, _pair(f))
            except StaleObject:
                if attempt:
                    raise CommandError(
                        f"The file {path} kept changing while it was being edited: nothing was changed. "
                        "View it and try again."
                    ) from None
                continue  # changed since the read: the edit is judged again against the current text
            except MemoryEditNotFound:
                raise CommandError(
                    f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
                ) from None
            except MemoryEditAmbiguous:
                lines, at = [], content.find(old_str)
                while at != -1:
                    lines.append(content[:at].count("\n") + 1)
                    at = content.find(old_str, at + 1)
                raise CommandError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                    f"{', '.join(map(str, lines))}. Please ensure it is unique"
                ) from None
            except (MemoryApiError, MemoryConnectionError) as err:
                self._service(_raiser(err), path)
            changed = content[: max(content.find(old_str), 0)].count("\n")
            new_lines = str(edited.get("content", "")).split("\n")
            low, high = max(0, changed - 2), min(len(new_lines), changed + 3)
            snippet = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}" for n in range(low + 1, high + 1)]
            return (
                "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                + "\n".join(snippet)
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        sp = self._file(path)
        f = self._existing(sp, path)
        lines = split_lines(str(f.get("content", "")))
        if insert_line < 0 or insert_line > len(lines):
            raise CommandError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range [0, {len(lines)}]."
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        text = "\n".join(lines)
        if not text.endswith("\n"):
            text += "\n"
        try:
            self._service(lambda: self.files.write(sp, text, _pair(f)), path)
        except CommandError as refused:
            if isinstance(refused.__cause__, StaleObject):
                raise CommandError(
                    f"The file {path} changed while the text was being inserted: nothing was changed. "
                    "View it again and retry."
                ) from refused
            raise
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        sp = self.service_path(path)
        if sp is None:
            raise CommandError("Cannot delete the /memories directory itself")
        if not self._is_folder(sp):
            for attempt in (0, 1):
                f = self._show(sp, path)
                if f is None:
                    break
                try:
                    self.files.delete(sp, _pair(f))
                except StaleObject:
                    if attempt:
                        raise CommandError(f"The file {path} kept changing: nothing was deleted.") from None
                    continue
                except (MemoryApiError, MemoryConnectionError) as err:
                    self._service(_raiser(err), path)
                return f"Successfully deleted {path}"
        # A folder: each file under it, on the pair its listing shows (not one transaction).
        rows = self._listed(sp)
        if not rows:
            raise CommandError(f"The path {path} does not exist")
        for file_path, _ in rows:
            self._delete_one(file_path, path)
        return f"Successfully deleted {path}"

    def _delete_one(self, sp: str, path: str) -> None:
        f = self._show(sp, path)
        if f is not None:
            pair = _pair(f)
            self._service(lambda: self.files.delete(sp, pair), path)

    def rename(self, old_path: str, new_path: str) -> str:
        so, sn = self.service_path(old_path), self.service_path(new_path)
        if so is None:
            raise CommandError("Cannot rename the /memories directory itself")
        if sn is not None and self._top_level(sn):
            self._file(new_path, creating=True)  # refused: it names the folders a file can go in
        if sn is None or self._is_folder(sn):
            raise CommandError(f"The destination {new_path} already exists")
        for attempt in (0, 1):
            f = None if self._is_folder(so) else self._show(so, old_path)
            if f is None:
                if self._listed(so):
                    raise CommandError(
                        f"The path {old_path} is a directory: a rename here moves one file in one transaction, "
                        "so rename the files inside it one at a time."
                    )
                if self._show(sn, new_path) is not None:  # the reference judges the destination first
                    raise CommandError(f"The destination {new_path} already exists")
                raise CommandError(f"The path {old_path} does not exist")
            try:
                self.files.rename(so, sn, _pair(f))
            except AlreadyExists:
                raise CommandError(f"The destination {new_path} already exists") from None
            except StaleObject:
                if attempt:
                    raise CommandError(f"The file {old_path} kept changing: nothing was renamed.") from None
                continue
            except (MemoryApiError, MemoryConnectionError) as err:
                self._service(_raiser(err), self._side(err, so, old_path, sn, new_path))
            return f"Successfully renamed {old_path} to {new_path}"
        raise AssertionError("unreachable")  # pragma: no cover

    def _side(self, err: BaseException, so: str, old_path: str, sn: str, new_path: str) -> str:
        """The path a refused rename names: the old one when the refusal is about it (its side is
        read-only, or its mounted Memory is gone while the new side lies in none), else the new one (a full
        scope, a path that does not fit, a read-only destination)."""
        if isinstance(err, MemoryReadOnly) and not self._writable(so):
            return old_path
        if isinstance(err, MemoryScopeUnavailable) and self._mount_of(so) is not None and self._mount_of(sn) is None:
            return old_path
        return new_path


def _raiser(err: BaseException) -> Callable[[], Any]:
    def again() -> Any:
        raise err

    return again


def render_folder(shown: str, files: Mapping[str, int], folders: set[str]) -> str:
    """A folder two levels deep, in the SDK's format: each entry's size (a folder's: the bytes under it)
    and path, depth first, by name, hidden items (a segment starting with '.') left out."""
    sizes: dict[str, int] = {}
    kinds: dict[str, bool] = {}  # path -> is a folder
    for rel, n in files.items():
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            d = "/".join(parts[:depth])
            sizes[d] = sizes.get(d, 0) + n
            kinds[d] = True
        kinds.setdefault(rel, False)
        sizes[rel] = n if not kinds[rel] else sizes.get(rel, 0)
    for folder in folders:
        parts = folder.split("/")
        for depth in range(1, len(parts) + 1):
            d = "/".join(parts[:depth])
            kinds[d] = True
            sizes.setdefault(d, 0)
    out = [f"{format_size(sum(files.values()))}\t{shown}"]

    def walk(prefix: str, depth: int) -> None:
        children = sorted(
            p for p in kinds if p.startswith(prefix) and "/" not in p[len(prefix) :] and p != prefix.rstrip("/")
        )
        for child in children:
            name = child[len(prefix) :]
            if not name or name.startswith("."):
                continue
            folder = kinds[child]
            out.append(f"{format_size(sizes.get(child, 0))}\t{shown}/{child}{'/' if folder else ''}")
            if folder and depth < 2:
                walk(child + "/", depth + 1)

    walk("", 1)
    header = f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:"
    return header + "\n" + "\n".join(out)
