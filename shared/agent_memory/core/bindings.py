"""Named bindings (memory_context): the grammar, the defaults and the profile limit.

Pure functions over plain data; resolving a binding to an anchor is the resolver's job.
"""

from __future__ import annotations

from typing import Any, Literal

from agent_memory.api.errors import ApiError
from agent_memory.core.ids import is_uuid
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.paths import ROOT_RE, SCOPES

Access = Literal["read", "read_write"]
ACCESS_WORDS = ("read", "read_write")
MAX_BINDINGS = 16
_BINDING_KEYS = {"name", "scope", "access", "conversation_public_id", "speaker_public_id"}


@dataclass(frozen=True, slots=True)
class Binding:
    name: str
    scope: str
    access: Access
    conversation_public_id: str | None = None
    speaker_public_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "scope": self.scope, "access": self.access}
        if self.conversation_public_id:
            out["conversation_public_id"] = self.conversation_public_id
        if self.speaker_public_id:
            out["speaker_public_id"] = self.speaker_public_id
        return out


DEFAULT_BINDINGS = (
    Binding("conversation", "conversation", "read_write"),
    Binding("workspace", "workspace", "read_write"),
    Binding("agent", "agent", "read_write"),
    Binding("speaker", "speaker", "read_write"),
)


def _fail(message: str) -> ApiError:
    return ApiError("validation_failed", message)


def _parse_binding(raw: object, index: int, *, limit: bool) -> Binding:
    where = f"bindings[{index}]"
    if not isinstance(raw, dict):
        raise _fail(f"{where} must be an object with name, scope and access.")
    unknown = sorted(set(raw) - _BINDING_KEYS)
    if unknown:
        # The seed's code for a binding outside the grammar; the sentence names the field it may have meant.
        import difflib  # only here: a refusal's suggestion, not worth every route's import

        near = difflib.get_close_matches(str(unknown[0]), sorted(_BINDING_KEYS), n=1, cutoff=0.6)
        fix = f"did you mean `{near[0]}`?" if near else f"the fields are {', '.join(sorted(_BINDING_KEYS))}."
        raise _fail(f"{where} has unknown field(s): {', '.join(unknown)}; {fix}")
    name, scope, access = raw.get("name"), raw.get("scope"), raw.get("access")
    if not isinstance(name, str) or not ROOT_RE.match(name):
        raise _fail(f"{where}.name must match [a-z][a-z0-9_-]{{0,31}}.")
    if scope not in SCOPES:
        raise _fail(f"{where}.scope must be one of {', '.join(SCOPES)}.")
    if access not in ACCESS_WORDS:
        raise _fail(f"{where}.access must be read or read_write.")
    if name in SCOPES and name != scope:
        raise _fail(f"{where}: the root name {name!r} is reserved for the {name} scope.")
    conv_id = raw.get("conversation_public_id")
    speaker_id = raw.get("speaker_public_id")
    if conv_id is not None and (limit or scope != "conversation" or name == "conversation" or not is_uuid(conv_id)):
        raise _fail(
            f"{where}.conversation_public_id is allowed only on a differently named conversation binding, as a UUID."
        )
    if speaker_id is not None and (limit or scope != "speaker" or not is_uuid(speaker_id)):
        raise _fail(f"{where}.speaker_public_id is allowed only on a speaker binding, as a UUID.")
    return Binding(name, scope, access, conv_id, speaker_id)


def parse_bindings(value: object, *, limit: bool = False) -> tuple[Binding, ...]:
    """Validate a memory_context (or, with limit=True, a memory_context_limit) object."""
    label = "memory_context_limit" if limit else "memory_context"
    if not isinstance(value, dict) or set(value) != {"bindings"} or not isinstance(value["bindings"], list):
        raise _fail(f'{label} must be null or an object {{"bindings": [...]}}.')
    items = value["bindings"]
    if len(items) > MAX_BINDINGS:
        raise _fail(f"{label} allows at most {MAX_BINDINGS} bindings, not {len(items)}.")
    bindings = tuple(_parse_binding(raw, i, limit=limit) for i, raw in enumerate(items))
    names = [b.name for b in bindings]
    if len(set(names)) != len(names):
        raise _fail(f"{label}: every binding needs a unique name.")
    if (
        bindings
        and not limit
        and not any(
            b.name == "conversation" and b.scope == "conversation" and b.conversation_public_id is None
            for b in bindings
        )
    ):
        raise _fail("A nonempty memory_context must include the 'conversation' root for this conversation.")
    return bindings


def configured_bindings(memory_context: dict[str, Any] | None) -> tuple[Binding, ...]:
    """The stored configuration (already validated), or the default roots when it is null."""
    if memory_context is None:
        return DEFAULT_BINDINGS
    return parse_bindings(memory_context)


def apply_limit(bindings: tuple[Binding, ...], limit: dict[str, Any] | None) -> tuple[Binding, ...]:
    """Intersect with an agent's memory_context_limit: never adds a root, and read-only wins."""
    if limit is None:
        return bindings
    allowed = {(b.name, b.scope): b.access for b in parse_bindings(limit, limit=True)}
    out = []
    for b in bindings:
        ceiling = allowed.get((b.name, b.scope))
        if ceiling is None:
            continue
        access: Access = "read" if "read" in (ceiling, b.access) else "read_write"
        out.append(Binding(b.name, b.scope, access, b.conversation_public_id, b.speaker_public_id))
    return tuple(out)
