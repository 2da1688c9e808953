"""What a memory verb acts on: the caller, the door it came through, and the sources its roots resolve to.

The resolver builds a `Context` (loading rows in as few batches as it can) and `core/access.py` decides
every `Source`'s reach; the verbs (memory, skills, block, tools) only read them.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal

from agent_memory.api.errors import ApiError
from agent_memory.core.bindings import Binding
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import Anchor, Author, Conversation, Document, FrozenBinding, Principal, Workspace
from agent_memory.core.paths import SCOPES, MemoryPath
from agent_memory.core.ports import MemoryStore, Ref

# The doors a Context is opened through: the four memory doors of the route contract, and a model's
# execution (its tools), which works from bindings frozen when the execution began.
ContextDoor = Literal["conversation", "workspace", "profile", "definition", "execution", "memory"]
MEMORY_PROVIDER_KEY = "nexus.memory"


@dataclass(slots=True)
class Source:
    """A binding resolved for one request: where its rows hang, and whether this caller may change them.

    `writable` is the caller's standing on the rows (a read-only binding is refused on its own account,
    before standing is looked at); `unavailable` says why a root names no rows here.
    """

    binding: Binding
    anchor: Anchor | None
    writable: bool
    unavailable: str | None = None
    agent_public_id: str | None = None
    speaker_public_id: str | None = None
    # An alias of an archived conversation: its rows are read-only through the doors, as the host's are.
    archived: bool = False

    @property
    def name(self) -> str:
        return self.binding.name

    @property
    def scope(self) -> str:
        return self.binding.scope

    @property
    def anchor_public_id(self) -> str | None:
        if self.anchor is None:
            return None
        return self.anchor.speaker_id or self.anchor.owner_id

    @property
    def anchored(self) -> Anchor:
        """The anchor of a root that resolved; an unavailable one is refused with its reason."""
        if self.anchor is None:
            raise _unavailable(self)
        return self.anchor

    def frozen(self) -> FrozenBinding:
        """This resolved root as an execution keeps it (only an available root is ever frozen)."""
        b = self.binding
        return FrozenBinding(
            name=b.name,
            scope=b.scope,
            access=b.access,
            anchor_public_id=self.anchor_public_id or "",
            conversation_public_id=b.conversation_public_id,
            speaker_public_id=self.speaker_public_id if b.scope == "speaker" else None,
            agent_public_id=self.agent_public_id if b.scope in ("agent", "speaker") else None,
        )


@dataclass(slots=True)
class Context:
    """Everything a memory verb needs once the caller is known and allowed in."""

    store: MemoryStore
    principal: Principal
    door: ContextDoor
    sources: dict[str, Source]
    workspace: Workspace | None = None
    conversation: Conversation | None = None
    loaded: dict[Ref, Any] = field(default_factory=dict)
    # The execution a model's tool call runs in: its versions name the run that wrote them.
    execution_public_id: str | None = None
    # Who the versions are by when that is not the caller (a git sync writes as the sync).
    acting_as: Author | None = None
    # An execution's: the executions whose stop halts its writes (itself and its ancestors), checked again
    # in every commit it makes.
    stops: tuple[str, ...] = ()
    # A session's Memory mount: the absolute folder its files are known by there, so a refusal about one
    # file's content names the path the session uses (`/workspace/runbooks/deploy.md`, not `deploy.md`).
    files_under: str | None = None

    def shown(self, path: str) -> str:
        """`path` (a logical path of this context) as the caller knows it."""
        return path if self.files_under is None else f"{self.files_under}/{path}"

    def author(self) -> Author:
        """Who the versions this request writes are by."""
        if self.acting_as is not None:
            return self.acting_as
        p = self.principal
        name = p.name
        if name is None:
            # A token (or execution) row stored before it kept its principal's name: read it once.
            ref = Ref.human(p.public_id) if p.kind == "human" else Ref.agent(p.public_id)
            self.fetch([ref])
            name = getattr(self.loaded.get(ref), "name", None)
        return Author(p.kind, p.public_id, name, self.execution_public_id)

    @property
    def override_provider(self) -> str | None:
        if self.workspace is None:
            return None
        return self.workspace.tool_provider_overrides.get(MEMORY_PROVIDER_KEY)

    def source(self, mp: MemoryPath) -> Source:
        """The source a path's root names, or the refusal for a root this request cannot use."""
        src = self.sources.get(mp.root)
        if src is None:
            if mp.root in SCOPES:
                raise ApiError(
                    "memory_scope_unavailable",
                    f"The {mp.root}/ root is not available here: it is not among this request's memory bindings.",
                )
            raise ApiError(
                "memory_path_invalid",
                f"{mp.root!r} is not a memory scope (conversation, workspace, user, agent, speaker) "
                "nor a root name bound here.",
            )
        if src.anchor is None:
            raise _unavailable(src)
        return src

    def readable(self) -> list[Source]:
        """Sources an unqualified read (list, grep, the block) walks: unavailable ones are left out."""
        return [s for s in self.sources.values() if s.anchor is not None]

    def document(self, src: Source, rest: str) -> Document | None:
        ref = Ref.document(src.anchored, rest)
        if ref not in self.loaded:
            self.loaded[ref] = self.store.get_many([ref])[ref]
        doc: Document | None = self.loaded[ref]
        return doc

    def loaded_document(self, src: Source, rest: str) -> tuple[bool, Document | None]:
        """(whether the request's batch reads already loaded the row, the row or None); never a request."""
        ref = Ref.document(src.anchored, rest)
        if ref not in self.loaded:
            return False, None
        doc: Document | None = self.loaded[ref]
        return True, doc

    def fetch(self, refs: list[Ref]) -> None:
        """Load the refs not loaded yet, in one batch."""
        missing = [r for r in dict.fromkeys(refs) if r not in self.loaded]
        if missing:
            self.loaded.update(self.store.get_many(missing))


def _unavailable(src: Source) -> ApiError:
    return ApiError("memory_scope_unavailable", f"The {src.name}/ root is unavailable: {src.unavailable}.")
